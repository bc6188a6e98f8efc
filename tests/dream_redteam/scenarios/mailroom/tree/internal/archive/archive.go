package archive

import (
	"compress/gzip"
	"io"
)

// Writer compresses the daily archive with gzip.
func Writer(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }
