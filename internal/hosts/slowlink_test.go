package hosts

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// slowLink is a TCP proxy to upstream that carries at most rate bytes a
// second each way, like a saturated WAN link (toxiproxy's bandwidth toxic).
func slowLink(t *testing.T, upstream string, rate int) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				defer func() { _ = dst.Close(); _ = src.Close() }()
				buf := make([]byte, 512)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(n) * time.Second / time.Duration(rate))
						if _, werr := dst.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}
			wg.Add(2)
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return l.Addr().String()
}

// A link a transfer saturates is alive, though a keepalive waits behind
// the data queued ahead of it (here in the link's buffers, as in a
// router's) for longer than the keepalive's timeout: an upload through it
// completes, the connection kept. Scaled down: a 400 ms timeout, a link of
// at most 1 MB/s, 4 MB. (Taking the keepalive's silence alone as death,
// this upload fails within half a second.)
func TestSlowLinkIsNotTakenForDead(t *testing.T) {
	defer func(i, d time.Duration) { keepAliveInterval, keepAliveTimeout = i, d }(keepAliveInterval, keepAliveTimeout)
	keepAliveInterval, keepAliveTimeout = 50*time.Millisecond, 400*time.Millisecond
	srv := startInProcessServer(t, nil)
	cfg := srv.cfg
	cfg.Address = slowLink(t, srv.cfg.Address, 1<<20)
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	data := bytes.Repeat([]byte("sandboxer "), 400<<10) // 4 MB: about 4 s on the link
	dst := filepath.Join(t.TempDir(), "big")
	if err := Upload(t.Context(), tr, dst, io.NopCloser(bytes.NewReader(data)), 0o600); err != nil {
		t.Fatalf("an upload over a slow, live link: %v", err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file arrived with %d bytes, %v", len(got), err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Fatalf("%d connections: the live one was given up", n)
	}
}
