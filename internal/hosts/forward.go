package hosts

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Forward is a local port forward, as `ssh -L` makes: a listener on this
// machine whose every accepted connection is relayed to a connection that
// dial opens (from a host: Host.Dial). Any number of connections may be
// relayed at once; Close ends the listener and all of them.
type Forward struct {
	ln   net.Listener
	dial func(ctx context.Context) (net.Conn, error)
	// failed hears of each connection that could not be relayed (the dial
	// failed): the client only sees its connection closed.
	failed func(error)

	// ctx ends with Close: dials in flight give up.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // both ends of every relayed connection
	wg     sync.WaitGroup        // the accept loop and every relay
}

// forwardDialTimeout bounds each relayed connection's dial: a client waits
// no longer than this for the far end before its connection is closed.
const forwardDialTimeout = 30 * time.Second

// NewForward listens on listenAddr (e.g. "127.0.0.1:0") and relays every
// connection to one dial opens. failed, which may be nil, is called with
// the reason of each connection that could not be relayed.
func NewForward(listenAddr string, dial func(ctx context.Context) (net.Conn, error), failed func(error)) (*Forward, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	if failed == nil {
		failed = func(error) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Forward{ln: ln, dial: dial, failed: failed, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Addr is the address the forward listens on.
func (f *Forward) Addr() *net.TCPAddr {
	addr, _ := f.ln.Addr().(*net.TCPAddr) // a "tcp" listener's
	return addr
}

// Close stops listening, closes every relayed connection (both ends) and
// returns once nothing of the forward runs any more.
func (f *Forward) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	err := f.ln.Close()
	f.cancel()
	for c := range f.conns {
		_ = c.Close() // ending it is the point; how it ends says nothing
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

// track registers c to be closed by Close; false when Close has run (c is
// then closed here).
func (f *Forward) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = c.Close() // never relayed
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forward) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close() // its relay is over
}

// serve accepts until the listener is closed.
func (f *Forward) serve() {
	defer f.wg.Done()
	var backoff time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, or a connection reset before it
			// was accepted: wait a little (as net/http does) rather than
			// spin, and go on.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-f.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		if !f.track(c) {
			return
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

// relay copies between the client c and a new connection to the far end,
// each direction until its reader's end, whose end is passed on as a
// half-close: a client that shuts down its writing side (an HTTP client
// after its request, `nc -N`) still gets the whole answer.
func (f *Forward) relay(c net.Conn) {
	defer f.wg.Done()
	defer f.untrack(c)
	ctx, cancel := context.WithTimeout(f.ctx, forwardDialTimeout)
	up, err := f.dial(ctx)
	cancel()
	if err != nil {
		f.failed(err)
		return
	}
	if !f.track(up) {
		return
	}
	defer f.untrack(up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(up, c)
	}()
	pipe(c, up)
	<-done
}

// pipe copies src to dst, then passes the end of src on to dst. A copy
// that fails (a reset, or Close) closes both, which ends the other
// direction too.
func pipe(dst, src net.Conn) {
	if err := copyStream(dst, src); err != nil {
		_ = dst.Close() // failing the other direction is the point
		_ = src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	// A connection without half-close (or whose half-close failed): only
	// a full close tells the far end there is nothing more.
	_ = dst.Close()
}

// channelBufferSize is the copy buffer of a direction whose source is not
// a TCP connection (an SSH channel). A read takes whatever arrived since
// the one before, up to this size, where io.Copy's 32 KiB is one SSH
// packet: a fast sender then costs fewer writes to the client and fewer
// window adjustments sent back to sshd (measured through sshd to a
// container: about a tenth less of the relay's CPU per byte). Reads
// return as soon as anything arrived, so nothing waits for the buffer to
// fill.
const channelBufferSize = 256 << 10

var channelBuffers = sync.Pool{New: func() any { b := make([]byte, channelBufferSize); return &b }}

// copyStream copies src to dst until src's end.
func copyStream(dst, src net.Conn) error {
	if _, ok := src.(*net.TCPConn); ok {
		// From the client: to a TCP connection (a local host's forward)
		// the kernel splices; to an SSH channel, each write goes out as
		// packets of its own whatever the buffer.
		_, err := io.Copy(dst, src)
		return err
	}
	buf, ok := channelBuffers.Get().(*[]byte)
	if !ok { // only *[]byte are put there; a fresh buffer all the same
		b := make([]byte, channelBufferSize)
		buf = &b
	}
	defer channelBuffers.Put(buf)
	// Wrapped, so that neither side's ReadFrom or WriteTo (with buffers of
	// their own) takes over the copy.
	_, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
	return err
}
