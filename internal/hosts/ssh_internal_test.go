package hosts

import (
	"context"
	"errors"
	"io"
	"testing"
)

// A channel open that never answers ends with its connection: the caller
// gets an error that asks for a redial (io.EOF), and the open's late
// result is handed to unused, so that nothing it opened is left open.
func TestChannelOpenEndsWithItsConnection(t *testing.T) {
	gone := make(chan struct{})
	release := make(chan int)
	unused := make(chan int, 1)
	opening := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := withContext(context.Background(), gone, func() (int, error) {
			close(opening)
			return <-release, nil
		}, func(v int) { unused <- v })
		done <- err
	}()
	<-opening
	close(gone)
	err := <-done
	if !errors.Is(err, errConnectionEnded) || !errors.Is(err, io.EOF) {
		t.Fatalf("open on an ended connection: %v, want errConnectionEnded (io.EOF)", err)
	}
	release <- 7
	if v := <-unused; v != 7 {
		t.Fatalf("unused got %d, want the late result 7", v)
	}
}
