package events

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestSignedDeliveryWithRetry(t *testing.T) {
	var calls atomic.Int32
	got := make(chan Event, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // first attempt fails
			return
		}
		if r.Header.Get(SignatureHeader) != Sign("s3cret", body) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var e Event
		if err := json.Unmarshal(body, &e); err != nil {
			w.WriteHeader(http.StatusBadRequest) // the test sees no event and fails
			return
		}
		got <- e
	}))
	defer srv.Close()
	s := New(srv.URL, "s3cret", "agt")
	if err := s.Send(context.Background(), Event{Event: SandboxCreated, SandboxID: "abc", Host: "h1", Profile: "p"}); err != nil {
		t.Fatal(err)
	}
	e := <-got
	if e.Event != SandboxCreated || e.Actor != "agt" || e.SandboxID != "abc" || e.Timestamp.IsZero() {
		t.Fatalf("event %+v", e)
	}
}

func TestUnreachableIsBoundedError(t *testing.T) {
	s := New("http://127.0.0.1:1/events", "", "")
	s.Budget = 2 * time.Second
	start := time.Now()
	err := s.Send(context.Background(), Event{Event: SnapshotDeleted})
	if err == nil {
		t.Fatal("delivery to a closed port succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s, beyond the budget", d)
	}
	var nilSender *Sender
	if err := nilSender.Send(context.Background(), Event{}); err != nil {
		t.Fatal("a nil sender must send nothing")
	}
}

// A webhook URL carries its token: a failed delivery names the scheme and
// host only, for a refused connection and for a refusing endpoint alike.
func TestFailedDeliveryHidesTheURLsToken(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer refusing.Close()
	for _, u := range []string{"http://127.0.0.1:1/hooks/T0K3N-secret?sig=T0K3N-secret", refusing.URL + "/hooks/T0K3N-secret?sig=T0K3N-secret"} {
		s := New(u, "", "")
		s.Budget, s.Attempts = 2*time.Second, 1
		err := s.Send(context.Background(), Event{Event: SnapshotDeleted})
		if err == nil {
			t.Fatalf("delivery to %s succeeded", u)
		}
		if strings.Contains(err.Error(), "T0K3N") || !strings.Contains(err.Error(), "http://127.0.0.1") {
			t.Errorf("the error shows the URL's token, or no host: %v", err)
		}
	}
}
