// Package events delivers lifecycle events (sandbox.created, snapshot.deleted,
// ...) as signed JSON POSTs to the provider's events_url. Delivery is bounded:
// a few attempts within a fixed time budget, so an unreachable endpoint costs
// an apply at most that budget and a warning, never a failure.
package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Event names.
const (
	SandboxCreated    = "sandbox.created"
	SandboxReady      = "sandbox.ready"
	SandboxDestroyed  = "sandbox.destroyed"
	SnapshotCreated   = "snapshot.created"
	SnapshotDeleted   = "snapshot.deleted"
	RestoreCompleted  = "restore.completed"
	SignatureHeader   = "X-Sandboxer-Signature"
	defaultAttempts   = 3
	defaultBudget     = 5 * time.Second
	defaultRetryDelay = 250 * time.Millisecond
)

// Actor types, from the provider's actor setting.
var Actors = []string{"adm", "agt", "atm"}

// Event is one lifecycle event.
type Event struct {
	Event      string    `json:"event"`
	SandboxID  string    `json:"sandbox_id,omitempty"`
	SnapshotID string    `json:"snapshot_id,omitempty"`
	Host       string    `json:"host,omitempty"`
	Profile    string    `json:"profile,omitempty"`
	Timestamp  time.Time `json:"timestamp"`
	Actor      string    `json:"actor"`
}

// Sender posts events. A nil *Sender sends nothing.
type Sender struct {
	URL    string
	Secret string // HMAC-SHA256 key; empty sends unsigned
	Actor  string
	Client *http.Client
	// Budget bounds all attempts of one event together.
	Budget   time.Duration
	Attempts int
	Now      func() time.Time
}

// New returns a sender for url, or nil when url is empty.
func New(url, secret, actor string) *Sender {
	if url == "" {
		return nil
	}
	if actor == "" {
		actor = "atm"
	}
	return &Sender{URL: url, Secret: secret, Actor: actor, Client: &http.Client{},
		Budget: defaultBudget, Attempts: defaultAttempts, Now: time.Now}
}

// Sign returns the signature header value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Send delivers e, retrying within the budget. It returns an error (for a
// warning) when every attempt failed.
func (s *Sender) Send(ctx context.Context, e Event) error {
	if s == nil {
		return nil
	}
	e.Actor = s.Actor
	if e.Timestamp.IsZero() {
		e.Timestamp = s.Now().UTC()
	}
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Budget)
	defer cancel()
	var last error
	for attempt := 1; attempt <= s.Attempts; attempt++ {
		if last = s.post(ctx, body); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("event %s not delivered to %s within %s: %w", e.Event, shownURL(s.URL), s.Budget, last)
		case <-time.After(defaultRetryDelay * time.Duration(attempt)):
		}
	}
	return fmt.Errorf("event %s not delivered to %s after %d attempts: %w", e.Event, shownURL(s.URL), s.Attempts, last)
}

// shownURL is what a diagnostic says of the events URL: its scheme and
// host. A webhook's path, query and user info often carry its token.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the events URL"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

func (s *Sender) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("the events URL is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	if s.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	}
	resp, err := s.Client.Do(req)
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // its message holds the whole URL
	}
	if err != nil {
		return err
	}
	_ = resp.Body.Close() // the status is the answer; the body is not read
	if resp.StatusCode >= 300 {
		return fmt.Errorf("endpoint answered %s", resp.Status)
	}
	return nil
}
