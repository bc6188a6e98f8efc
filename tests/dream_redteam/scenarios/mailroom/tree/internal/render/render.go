package render

import (
	"embed"
	"html/template"
)

//go:embed templates/*.html
var files embed.FS

// Templates parses the embedded email templates.
func Templates() (*template.Template, error) { return template.ParseFS(files, "templates/*.html") }
