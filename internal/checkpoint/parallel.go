package checkpoint

import (
	"io"
	"sync"
)

// copyBuffers are the 1 MiB buffers file data is copied through: far fewer
// read/write calls than io.Copy's 32 KiB for the same bytes.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// copyBuffer takes a buffer from copyBuffers; put it back when done.
func copyBuffer() *[]byte {
	bp, ok := copyBuffers.Get().(*[]byte)
	if !ok { // never: the pool holds nothing else
		b := make([]byte, 1<<20)
		bp = &b
	}
	return bp
}

// copyBuffered copies src to dst through a pooled buffer. (src is wrapped
// so that *os.File's WriterTo, which would fall back to small buffers, is
// not used.)
func copyBuffered(dst io.Writer, src io.Reader) error {
	bp := copyBuffer()
	defer copyBuffers.Put(bp)
	_, err := io.CopyBuffer(dst, struct{ io.Reader }{src}, *bp)
	return err
}

// forEachFile runs fn on the indexes of the file entries (see forEach).
func forEachFile(entries []Entry, workers int, done <-chan struct{}, fn func(i int) error) error {
	var files []int
	for i := range entries {
		if entries[i].Type == TypeFile {
			files = append(files, i)
		}
	}
	return forEach(files, workers, done, fn)
}

// forEach runs fn on each of indexes, on workers goroutines (0 means 4),
// and returns the first error. Once an error is seen or done is closed, the
// remaining indexes are skipped.
func forEach(indexes []int, workers int, done <-chan struct{}, fn func(i int) error) error {
	if workers <= 0 {
		workers = 4
	}
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if failed() || aborted(done) {
					continue
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, i := range indexes {
		work <- i
	}
	close(work)
	wg.Wait()
	return firstErr
}
