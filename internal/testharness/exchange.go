package testharness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Exchange connects to addr, sends payload, shuts its writing side and
// reads the answer to its end: one request/response over a half-closed
// connection, as through an echo server.
func Exchange(addr string, payload []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }() // read to its end already
	if err := c.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := c.Write(payload); err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, fmt.Errorf("a %T is no TCP connection", c)
	}
	if err := tc.CloseWrite(); err != nil {
		return nil, err
	}
	return io.ReadAll(c)
}

// ManyExchanges runs n Exchanges through addr at once, each with its own
// payload of size bytes, and fails the test on any answer that is not its
// payload (addr leads to an echo server).
func ManyExchanges(t testing.TB, addr string, n, size int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := bytes.Repeat([]byte(fmt.Sprintf("%04d", i)), size/4)
			got, err := Exchange(addr, payload)
			switch {
			case err != nil:
				errs <- fmt.Errorf("connection %d: %w", i, err)
			case !bytes.Equal(got, payload):
				errs <- fmt.Errorf("connection %d: got %d bytes back, sent %d", i, len(got), len(payload))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// CheckForwardClosed fails the test unless addr (a forward's listening
// address) refuses connections and open, a connection made through it
// before it closed, has ended.
func CheckForwardClosed(t testing.TB, addr string, open net.Conn) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		_ = c.Close() // it should not have been accepted at all
		t.Fatalf("%s still accepts connections after Close", addr)
	}
	if err := open.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := open.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) && (err == nil || !strings.Contains(err.Error(), "connection reset")) {
		t.Fatalf("a connection open through the forward did not end with Close: read %d bytes, %v", n, err)
	}
}
