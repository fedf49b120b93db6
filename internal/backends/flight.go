package backends

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Flight shares calls by key, as golang.org/x/sync/singleflight does: the
// callers asking for a key while a call for it runs share that call, and a
// finished call answers later callers for as long as Keep (a success) or
// KeepFailures (a failure) says. A zero Flight shares only calls that overlap.
//
// Each caller waits with its own context: one whose context ends returns at
// once, and the call goes on for the others. The call runs with its
// starter's context (values, the log among them) minus the cancellation,
// bounded by Timeout instead: no caller's deadline or cancellation ever
// becomes another caller's error.
type Flight[K comparable, V any] struct {
	What         string        // what a call does, for the log
	Keep         time.Duration // how long a success answers later callers: 0 not at all, or Forever
	KeepFailures time.Duration // the same for a failure
	Timeout      time.Duration // bounds each call; 0 is detachedTimeout

	mu    sync.Mutex
	calls map[K]*flightCall[V] // in flight or kept
}

// Forever keeps a result as long as its Flight lives.
const Forever time.Duration = math.MaxInt64

type flightCall[V any] struct {
	done  chan struct{} // closed once val, err and until are set
	val   V
	err   error
	until time.Time // when the result stops answering; zero while in flight
}

// Do returns key's value: that of a call in flight or kept, else fn's.
func (f *Flight[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (V, error) {
	val, _, err := f.join(ctx, key, fn)
	return val, err
}

// Peek is Do without a call of its own: key's value when a call for it is
// in flight (then waited for) or kept; ok is false when there is none.
func (f *Flight[K, V]) Peek(ctx context.Context, key K) (val V, ok bool, err error) {
	return f.join(ctx, key, nil)
}

func (f *Flight[K, V]) join(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (val V, ok bool, err error) {
	f.mu.Lock()
	c := f.calls[key]
	if c != nil && !c.until.IsZero() && !time.Now().Before(c.until) {
		c = nil // finished, and kept no longer
	}
	if c != nil {
		f.log(ctx, "shared call reused", key)
	} else if fn != nil {
		c = &flightCall[V]{done: make(chan struct{})}
		if f.calls == nil {
			f.calls = map[K]*flightCall[V]{}
		}
		f.calls[key] = c
		go f.run(ctx, key, c, fn)
	}
	f.mu.Unlock()
	if c == nil {
		return val, false, nil
	}
	select {
	case <-c.done:
		return c.val, true, c.err
	case <-ctx.Done():
		return val, true, ctx.Err()
	}
}

func (f *Flight[K, V]) run(ctx context.Context, key K, c *flightCall[V], fn func(ctx context.Context) (V, error)) {
	// The call serves every caller of key: what it logs names none of the
	// sandboxes of the one that started it.
	ctx = tflog.SetField(tflog.SetField(ctx, "sandbox_id", sharedCall), "extension", sharedCall)
	f.log(ctx, "shared call started", key)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(f.Timeout, detachedTimeout))
	defer cancel()
	val, err := fn(ctx)
	keep := f.Keep
	if err != nil {
		keep = f.KeepFailures
	}
	f.mu.Lock()
	c.val, c.err, c.until = val, err, time.Now().Add(keep)
	close(c.done)
	f.mu.Unlock()
}

// sharedCall is what a shared call logs in place of its starter's
// sandbox_id and extension.
const sharedCall = "(shared)"

// Invalidate drops the calls, in flight or kept, of the keys match accepts:
// their next callers call anew; those waiting still get their results.
func (f *Flight[K, V]) Invalidate(ctx context.Context, match func(key K) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key := range f.calls {
		if match(key) {
			delete(f.calls, key)
			f.log(ctx, "shared call invalidated", key)
		}
	}
}

func (f *Flight[K, V]) log(ctx context.Context, msg string, key K) {
	tflog.Debug(ctx, msg, map[string]any{"call": f.What, "key": fmt.Sprint(key)})
}
