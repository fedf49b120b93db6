package metering

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

func newLedger(t *testing.T, balance string) *Ledger {
	t.Helper()
	p := filepath.Join(t.TempDir(), "credits.json")
	if err := os.WriteFile(p, []byte(`{"balance_usd": `+balance+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestHoldDebitRelease(t *testing.T) {
	l := newLedger(t, "10")
	if err := l.Hold("a", "profile.saas-stub", 4); err != nil {
		t.Fatal(err)
	}
	if avail, _ := l.Available(); avail != 6 {
		t.Fatalf("available %v after a hold of 4", avail)
	}
	if err := l.Hold("b", "profile.saas-stub", 7); !errors.Is(err, ErrInsufficient) {
		t.Fatalf("a hold over the available credits: %v", err)
	}
	// A sandbox's new hold replaces its old one (a ttl change).
	if err := l.Hold("a", "profile.saas-stub", 9); err != nil {
		t.Fatalf("re-holding within the credits: %v", err)
	}
	if avail, _ := l.Available(); avail != 1 {
		t.Fatalf("available %v after re-holding 9", avail)
	}
	if err := l.Debit("a", "profile.saas-stub", 1.25, 150*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := l.Debit("a", "profile.saas-stub", 1.25, 150*time.Minute); err != nil {
		t.Fatal(err)
	}
	if b, _ := l.Balance(); b != 8.75 {
		t.Fatalf("balance %v, want 8.75 (debited once)", b)
	}
	if err := l.Hold("c", "p", 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Release("c"); err != nil {
		t.Fatal(err)
	}
	if avail, _ := l.Available(); avail != 8.75 {
		t.Fatalf("available %v after a release", avail)
	}
}

func TestQuote(t *testing.T) {
	if q := Quote(0.5, 90*time.Minute); q != 0.75 {
		t.Fatalf("quote %v", q)
	}
}

// Debits from many goroutines and many processes at once: the final balance
// is exact and the file stays valid.
func TestConcurrentDebitsAreExact(t *testing.T) {
	l := newLedger(t, "1000")
	const goroutines, procs, each = 8, 4, 25
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := l.Debit(fmt.Sprintf("g%d-%d", g, i), "p", 0.01, time.Second); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	var cmds []*exec.Cmd
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDebitProcess$")
		cmd.Env = append(os.Environ(), "LEDGER_HELPER="+l.Path, "LEDGER_HELPER_ID="+strconv.Itoa(p), "LEDGER_HELPER_N="+strconv.Itoa(each))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	wg.Wait()
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	want := 1000 - float64((goroutines+procs)*each)*0.01
	if b, err := l.Balance(); err != nil || micros(b) != micros(want) {
		t.Fatalf("balance %v (%v), want exactly %v", b, err, want)
	}
}

// TestHelperDebitProcess is the body of the helper processes above.
func TestHelperDebitProcess(t *testing.T) {
	path := os.Getenv("LEDGER_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("LEDGER_HELPER_N"))
	l := &Ledger{Path: path, Now: time.Now}
	for i := 0; i < n; i++ {
		if err := l.Debit(fmt.Sprintf("p%s-%d", os.Getenv("LEDGER_HELPER_ID"), i), "p", 0.01, time.Second); err != nil {
			t.Fatal(err)
		}
	}
}
