package archive

import (
	"io"
	"testing"
)

func BenchmarkArchiveGzip(b *testing.B) {
	for i := 0; i < b.N; i++ {
		w := Writer(io.Discard)
		w.Close()
	}
}
