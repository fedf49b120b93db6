// Package metering is the credits ledger of metered extensions: a JSON file
// on the machine running Terraform (the provider's credits_file). Creating a
// metered sandbox places a hold of its quoted cost; destroying it releases
// the hold and debits the cost of its measured lifetime. Every change takes
// an exclusive file lock and rewrites the file atomically, so parallel
// applies (threads or processes) can neither corrupt nor double-spend it.
package metering

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/filelock"
)

// ErrInsufficient means the available credits do not cover a quote.
var ErrInsufficient = errors.New("insufficient credits")

// Transaction is one line of the ledger's history.
type Transaction struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"` // hold, release, debit
	SandboxID string    `json:"sandbox_id"`
	Profile   string    `json:"profile,omitempty"`
	AmountUSD float64   `json:"amount_usd"`
	Seconds   float64   `json:"lifetime_seconds,omitempty"`
}

// file is the ledger's JSON form. Amounts are dollars in the file, kept as
// whole micro-dollars in arithmetic so that sums are exact.
type file struct {
	BalanceUSD   float64            `json:"balance_usd"`
	Holds        map[string]float64 `json:"holds,omitempty"`
	Transactions []Transaction      `json:"transactions,omitempty"`
}

func micros(usd float64) int64     { return int64(math.Round(usd * 1e6)) }
func dollars(m int64) float64      { return float64(m) / 1e6 }
func roundUSD(usd float64) float64 { return dollars(micros(usd)) }

// Ledger is a credits file.
type Ledger struct {
	Path string
	Now  func() time.Time
}

// Open returns the ledger at path; the file must exist (it holds the credits).
func Open(path string) (*Ledger, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("credits_file %s: %w", path, err)
	}
	return &Ledger{Path: path, Now: time.Now}, nil
}

// Available is the balance less the holds of running sandboxes.
func (l *Ledger) Available() (float64, error) {
	var avail float64
	err := l.with(false, func(f *file) error {
		m := micros(f.BalanceUSD)
		for _, h := range f.Holds {
			m -= micros(h)
		}
		avail = dollars(m)
		return nil
	})
	return avail, err
}

// Balance is the balance (holds not deducted).
func (l *Ledger) Balance() (float64, error) {
	var b float64
	err := l.with(false, func(f *file) error { b = f.BalanceUSD; return nil })
	return b, err
}

// Hold reserves amount for a sandbox (replacing its earlier hold, as when
// its ttl changes), refusing with ErrInsufficient when the available
// credits do not cover it.
func (l *Ledger) Hold(sandboxID, profile string, amount float64) error {
	return l.with(true, func(f *file) error {
		avail := micros(f.BalanceUSD)
		for id, h := range f.Holds {
			if id != sandboxID {
				avail -= micros(h)
			}
		}
		if avail < micros(amount) {
			return fmt.Errorf("%w: %.2f USD available, %.2f USD needed", ErrInsufficient, dollars(avail), amount)
		}
		if f.Holds == nil {
			f.Holds = map[string]float64{}
		}
		f.Holds[sandboxID] = roundUSD(amount)
		f.Transactions = append(f.Transactions, Transaction{At: l.Now().UTC(), Kind: "hold", SandboxID: sandboxID, Profile: profile, AmountUSD: roundUSD(amount)})
		return nil
	})
}

// Release drops a sandbox's hold without a charge (its create failed).
func (l *Ledger) Release(sandboxID string) error {
	return l.with(true, func(f *file) error {
		if _, ok := f.Holds[sandboxID]; ok {
			f.Transactions = append(f.Transactions, Transaction{At: l.Now().UTC(), Kind: "release", SandboxID: sandboxID, AmountUSD: f.Holds[sandboxID]})
			delete(f.Holds, sandboxID)
		}
		return nil
	})
}

// Debit releases the sandbox's hold and charges amount for its lifetime.
// A sandbox already settled is not charged twice.
func (l *Ledger) Debit(sandboxID, profile string, amount float64, lifetime time.Duration) error {
	return l.with(true, func(f *file) error {
		for _, t := range f.Transactions {
			if t.Kind == "debit" && t.SandboxID == sandboxID {
				return nil
			}
		}
		delete(f.Holds, sandboxID)
		f.BalanceUSD = dollars(micros(f.BalanceUSD) - micros(amount))
		f.Transactions = append(f.Transactions, Transaction{At: l.Now().UTC(), Kind: "debit", SandboxID: sandboxID, Profile: profile,
			AmountUSD: roundUSD(amount), Seconds: math.Round(lifetime.Seconds()*1000) / 1000})
		return nil
	})
}

// with runs fn on the ledger under its lock; when write is set, fn's changes
// are written to a temp file, synced, and renamed over the ledger.
func (l *Ledger) with(write bool, fn func(*file) error) error {
	unlock, err := filelock.Lock(l.Path+".lock", write)
	if err != nil {
		return err
	}
	defer unlock()

	data, err := os.ReadFile(l.Path)
	if err != nil {
		return fmt.Errorf("credits_file %s: %w", l.Path, err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("credits_file %s is not a valid ledger (expected {\"balance_usd\": 25.0}): %w", l.Path, err)
	}
	if err := fn(&f); err != nil || !write {
		return err
	}
	out, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.Path), ".credits-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone already once renamed
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		_ = tmp.Close() // the write failed already; the file is discarded
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), l.Path)
}

// Quote is the cost of running a profile priced per hour for d.
func Quote(hourlyUSD float64, d time.Duration) float64 {
	return roundUSD(hourlyUSD * d.Hours())
}
