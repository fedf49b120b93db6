package backends_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/backends"
)

// The tests run in synctest bubbles: synctest.Wait returns once every
// caller waits, and time.Sleep moves the bubble's clock, not the test's.

type valueKey struct{}

// Three callers share one call. One whose context ends returns at once,
// the one that started the call too; the last still gets the result of the
// call, made with the starter's values but without its cancellation.
func TestFlightSharesACallAndEachCallerWaitsWithItsOwnContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f backends.Flight[string, any]
		release, calls := make(chan struct{}), 0
		fn := func(ctx context.Context) (any, error) { calls++; <-release; return ctx.Value(valueKey{}), ctx.Err() }
		do := func(ctx context.Context) chan error {
			errs := make(chan error, 1)
			go func() {
				if v, err := f.Do(ctx, "h", fn); err != nil || v != "starter's" {
					errs <- errors.Join(err, errors.New("not the starter's value"))
				}
				close(errs)
			}()
			synctest.Wait()
			return errs
		}
		starterCtx, cancelStarter := context.WithCancel(context.WithValue(t.Context(), valueKey{}, "starter's"))
		waiterCtx, cancelWaiter := context.WithCancel(t.Context())
		starter, waiter, other := do(starterCtx), do(waiterCtx), do(t.Context())
		cancelWaiter()
		cancelStarter()
		if err1, err2 := <-waiter, <-starter; !errors.Is(err1, context.Canceled) || !errors.Is(err2, context.Canceled) {
			t.Errorf("cancelled waiter and starter: %v, %v; want context.Canceled at once", err1, err2)
		}
		close(release)
		if err := <-other; err != nil || calls != 1 {
			t.Errorf("other caller: %v after %d calls, want the one call's value", err, calls)
		}
	})
}

func TestFlightKeepsResultsAsItsRuleSays(t *testing.T) {
	check := func(name string, keep, keepFailures time.Duration, fail error, after time.Duration, wantCalls int) {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, calls := backends.Flight[string, int]{Keep: keep, KeepFailures: keepFailures}, 0
				fn := func(context.Context) (int, error) { calls++; return calls, fail }
				_, _ = f.Do(t.Context(), "h", fn)
				time.Sleep(after)
				if got, err := f.Do(t.Context(), "h", fn); calls != wantCalls || got != calls || !errors.Is(err, fail) {
					t.Errorf("second caller after %s: %d, %v after %d calls; want call %d", after, got, err, calls, wantCalls)
				}
			})
		})
	}
	window, fail := 2*time.Second, errors.New("failed")
	check("never kept", 0, 0, nil, 0, 2)
	check("kept forever", backends.Forever, 0, nil, 1000*time.Hour, 1)
	check("a failure not kept forever", backends.Forever, 0, fail, 0, 2)
	check("within the window", window, window, nil, window-time.Millisecond, 1)
	check("a failure within the window", window, window, fail, window-time.Millisecond, 1)
	check("after the window", window, window, nil, window, 2)
}

// A call is bounded by the Flight's Timeout; Peek waits for a call in
// flight and finds a kept one; Invalidate drops the calls of the keys it
// matches only.
func TestFlightTimeoutPeekAndInvalidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, f, start := t.Context(), backends.Flight[string, string]{Keep: backends.Forever, Timeout: time.Minute}, time.Now()
		if _, err := f.Do(ctx, "hung", func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Errorf("a call that never ends: %v after %s, want the deadline after a minute", err, time.Since(start))
		}
		value := func(v string) func(context.Context) (string, error) {
			return func(context.Context) (string, error) { time.Sleep(time.Second); return v, nil }
		}
		go func() { _, _ = f.Do(ctx, "a", value("a1")) }()
		synctest.Wait()
		if v, ok, err := f.Peek(ctx, "a"); v != "a1" || !ok || err != nil {
			t.Errorf("Peek of a call in flight: %q, %v, %v; want its value", v, ok, err)
		}
		_, _ = f.Do(ctx, "b", value("b1"))
		f.Invalidate(ctx, func(key string) bool { return key == "a" })
		if v, _ := f.Do(ctx, "a", value("a2")); v != "a2" {
			t.Errorf("Do after Invalidate: %q, want a new call's a2", v)
		}
		if v, ok, _ := f.Peek(ctx, "b"); v != "b1" || !ok {
			t.Errorf("Peek of a key not invalidated: %q, %v; want b1", v, ok)
		}
	})
}

// A shared call serves every caller of its key: its log lines name none of
// the sandboxes of the caller that happened to start it.
func TestSharedCallLogsNoCallersSandbox(t *testing.T) {
	var buf bytes.Buffer
	ctx := tflog.SetField(tflogtest.RootLogger(context.Background(), &buf), "sandbox_id", "started-it")
	var f backends.Flight[string, int]
	f.What = "test read"
	if _, err := f.Do(ctx, "host-a", func(ctx context.Context) (int, error) {
		tflog.Debug(ctx, "inside the shared call")
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	entries, err := tflogtest.MultilineJSONDecode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("nothing was logged")
	}
	for _, e := range entries {
		if e["sandbox_id"] == "started-it" {
			t.Errorf("a shared call's line names its starter's sandbox: %v", e)
		}
	}
}
