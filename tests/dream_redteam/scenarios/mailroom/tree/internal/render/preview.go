package render

// PreviewWidth is the width of the HTML preview, in pixels.
const PreviewWidth = 640
