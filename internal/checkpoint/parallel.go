package checkpoint

import "sync"

// forEachFile runs fn on the indexes of the file entries, on workers
// goroutines (0 means 4), and returns the first error. Once an error is
// seen or done is closed, the remaining entries are skipped.
func forEachFile(entries []Entry, workers int, done <-chan struct{}, fn func(i int) error) error {
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
	for i := range entries {
		if entries[i].Type == TypeFile {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	return firstErr
}
