package backends

import (
	"testing"
	"time"
)

func TestFormatTTLIsHowPeopleWriteIt(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Hour:                  "2h",
		90 * time.Minute:               "1h30m",
		45 * time.Minute:               "45m",
		30 * time.Second:               "30s",
		time.Hour + 30*time.Second:     "1h0m30s",
		48 * time.Hour:                 "48h",
		time.Hour + time.Millisecond:   "1h0m0.001s",
		10*time.Minute + 5*time.Second: "10m5s",
	} {
		if got := FormatTTL(d); got != want {
			t.Errorf("FormatTTL(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(FormatTTL(d)); err != nil || back != d {
			t.Errorf("FormatTTL(%v) = %q does not parse back (%v, %v)", d, FormatTTL(d), back, err)
		}
	}
}
