//go:build linux && (amd64 || arm64)

package checkpoint

// Speed bars of the checkpoint store, measured side by side in one run
// against the tools they replace:
//
//  1. full capture        <= 1.0x  `tar -c | gzip -1` of the same directory
//  2. 1% incremental      <= 0.1x  the full capture; StoredBytes <= 1.1x the changed bytes
//  3. restore             <= 1.0x  `tar -x` of an uncompressed tar of the same data
//
// TestCheckpointSpeedBars runs only with SANDBOXER_BENCH=1 (see
// scripts/bench-checkpoint.sh and docs/benchmarks.md); it prints a table and
// does not fail on a missed bar unless SANDBOXER_BENCH_STRICT=1. The
// Benchmark* functions measure the same operations on a small workspace for
// `go test -bench` and profiling.
//
// Environment (defaults in brackets):
//
//	SANDBOXER_BENCH=1          run TestCheckpointSpeedBars
//	SANDBOXER_BENCH_FILES      files in the workspace [20000; benchmarks: 2000]
//	SANDBOXER_BENCH_BYTES      total bytes, suffixes K/M/G (binary) [1G; benchmarks: 64M]
//	SANDBOXER_BENCH_CHANGED    files rewritten for the incremental capture [FILES/100]
//	SANDBOXER_BENCH_RUNS       timed runs per operation, after one warm-up run [3]
//	SANDBOXER_BENCH_SEED       content seed [1]
//	SANDBOXER_BENCH_WORKERS    CaptureOptions/RestoreOptions.Workers [0: the package default]
//	SANDBOXER_BENCH_DIR        parent of the scratch directory [the system temp dir]
//	SANDBOXER_BENCH_KEEP=1     keep the scratch directory
//	SANDBOXER_BENCH_STRICT=1   fail the test when a bar is missed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchConfig is the workspace and measurement setup, from the environment.
type benchConfig struct {
	files   int
	bytes   int64
	changed int
	runs    int
	seed    uint64
	workers int
	dir     string
	keep    bool
	strict  bool
}

func benchEnvInt(name string, def int64) (int64, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def, nil
	}
	mult := int64(1)
	switch strings.ToUpper(v[len(v)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult != 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: expected a non-negative integer (K/M/G suffix allowed)", name, os.Getenv(name))
	}
	return n * mult, nil
}

func loadBenchConfig(defFiles int, defBytes int64) (benchConfig, error) {
	c := benchConfig{dir: os.Getenv("SANDBOXER_BENCH_DIR"), keep: os.Getenv("SANDBOXER_BENCH_KEEP") == "1",
		strict: os.Getenv("SANDBOXER_BENCH_STRICT") == "1"}
	files, err := benchEnvInt("SANDBOXER_BENCH_FILES", int64(defFiles))
	if err != nil {
		return c, err
	}
	if c.bytes, err = benchEnvInt("SANDBOXER_BENCH_BYTES", defBytes); err != nil {
		return c, err
	}
	c.files = int(files)
	if c.files < 1 || c.bytes < int64(c.files) {
		return c, fmt.Errorf("need at least 1 file and 1 byte per file (files=%d bytes=%d)", c.files, c.bytes)
	}
	changed, err := benchEnvInt("SANDBOXER_BENCH_CHANGED", int64(max(1, c.files/100)))
	if err != nil {
		return c, err
	}
	c.changed = int(min(changed, int64(c.files)))
	runs, err := benchEnvInt("SANDBOXER_BENCH_RUNS", 3)
	if err != nil {
		return c, err
	}
	c.runs = int(max(1, runs))
	seed, err := benchEnvInt("SANDBOXER_BENCH_SEED", 1)
	if err != nil {
		return c, err
	}
	if seed < 0 { // K/M/G suffixes can overflow benchEnvInt's result
		return c, fmt.Errorf("SANDBOXER_BENCH_SEED=%d: expected a non-negative integer", seed)
	}
	c.seed = uint64(seed)
	workers, err := benchEnvInt("SANDBOXER_BENCH_WORKERS", 0)
	if err != nil {
		return c, err
	}
	c.workers = int(workers)
	return c, nil
}

// ---- workspace generation -------------------------------------------------

// benchWorkspace is a generated workspace: file paths (slash-separated,
// relative) and sizes, in generation order.
type benchWorkspace struct {
	root  string
	paths []string
	sizes []int64
	dirs  int
	seed  uint64
}

// benchVocabulary is the text part of file contents: keywords of a few
// languages plus made-up identifiers, so text compresses like source code
// (gzip -1 to roughly a third) rather than like a repeated string.
var benchVocabulary = func() []string {
	words := strings.Fields(`func return if else for range var const type struct interface map
		string int64 error nil err ctx context package import defer go select case switch default
		true false len append make new def class self None print from public private static void
		let fn impl pub use mod match Some Ok Err async await export function const require module
		{ } ( ) [ ] := = == != <= >= && || + - * / ; , . -> => // # " ' TODO FIXME`)
	syll := []string{"ab", "ac", "al", "an", "ar", "be", "co", "de", "di", "en", "er", "fo", "ge", "in",
		"is", "le", "lo", "ma", "mi", "ne", "no", "or", "pa", "pe", "po", "ra", "re", "ri", "sa", "se",
		"so", "st", "ta", "te", "ti", "to", "un", "ur", "va", "ve"}
	r := rand.New(rand.NewPCG(42, 42))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := 2 + r.IntN(4); n > 0; n-- {
			s := syll[r.IntN(len(syll))]
			if b.Len() > 0 && r.IntN(3) == 0 {
				s = strings.ToUpper(s[:1]) + s[1:] // camelCase
			}
			b.WriteString(s)
		}
		words = append(words, b.String())
	}
	return words
}()

// benchContent fills buf with deterministic content: segments of 0.5-8 KiB,
// each either random bytes (30%: compressed or binary data) or lines of
// source-like text (70%): words drawn Zipf-like from the vocabulary, the odd
// hex token, some lines repeating a recent one. gzip -1 takes the mix to
// about half its size.
func benchContent(buf []byte, r *rand.Rand) {
	const hexdigits = "0123456789abcdef"
	// The vocabulary is never empty.
	zipf := rand.NewZipf(r, 1.3, 2, uint64(len(benchVocabulary))-1)
	var recent [16][2]int // start, end of recent lines in buf
	nrecent := 0
	pos := 0
	for pos < len(buf) {
		end := min(len(buf), pos+512+r.IntN(7680))
		if r.IntN(10) < 3 {
			for ; pos+8 <= end; pos += 8 {
				binary.LittleEndian.PutUint64(buf[pos:], r.Uint64())
			}
			for ; pos < end; pos++ {
				buf[pos] = byte(r.Uint32() & 0xff)
			}
			continue
		}
		for pos < end {
			if nrecent > 0 && r.IntN(3) == 0 {
				l := recent[r.IntN(min(nrecent, len(recent)))]
				pos += copy(buf[pos:end], buf[l[0]:l[1]])
				continue
			}
			line := pos
			for i := r.IntN(4); i > 0 && pos < end; i-- {
				buf[pos] = '\t'
				pos++
			}
			for w := 3 + r.IntN(10); w > 0 && pos < end; w-- {
				if r.IntN(80) == 0 {
					for i := 8 + r.IntN(32); i > 0 && pos < end; i-- {
						buf[pos] = hexdigits[r.IntN(16)]
						pos++
					}
				} else {
					pos += copy(buf[pos:end], benchVocabulary[zipf.Uint64()])
				}
				if pos < end {
					buf[pos] = ' '
					pos++
				}
			}
			if pos < end {
				buf[pos] = '\n'
				pos++
			}
			recent[nrecent%len(recent)] = [2]int{line, pos}
			nrecent++
		}
	}
}

// benchFileRand is the generator of file i's content in a given round
// (round 0: the original content; later rounds: rewrites).
func benchFileRand(seed uint64, i, round int) *rand.Rand {
	if i < 0 || round < 0 {
		panic(fmt.Sprintf("benchFileRand(%d, %d): negative file index or round", i, round))
	}
	return rand.New(rand.NewPCG(seed, uint64(i)<<16|uint64(round)))
}

// generateBenchWorkspace writes files files totalling total bytes under
// root: sizes log-normally distributed (many small files, a few of a few
// MiB), spread over a random tree of nested directories (about 40 files per
// directory, up to 6 levels deep).
func generateBenchWorkspace(root string, files int, total int64, seed uint64) (*benchWorkspace, error) {
	r := rand.New(rand.NewPCG(seed, 0))
	ws := &benchWorkspace{root: root, seed: seed}

	// Directory tree: each new directory hangs off a random existing one.
	type dir struct {
		path  string
		depth int
	}
	dirs := []dir{{"", 0}}
	top := []string{"src", "lib", "vendor", "assets", "build", "test", "docs", "tools", "data", "web"}
	for len(dirs) < max(1, files/40) {
		p := dirs[r.IntN(len(dirs))]
		if p.depth >= 6 {
			continue
		}
		name := fmt.Sprintf("d%03d", len(dirs))
		if p.depth == 0 && len(dirs) <= len(top) {
			name = top[len(dirs)-1]
		}
		dirs = append(dirs, dir{strings.TrimPrefix(p.path+"/"+name, "/"), p.depth + 1})
	}
	for _, d := range dirs[1:] {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d.path)), 0o755); err != nil {
			return nil, err
		}
	}
	ws.dirs = len(dirs) - 1

	// Sizes: log-normal weights scaled to the total, at least minSize each.
	minSize := min(int64(64), total/int64(files))
	weights := make([]float64, files)
	var sum float64
	for i := range weights {
		weights[i] = math.Exp(1.3 * r.NormFloat64())
		sum += weights[i]
	}
	rest := total - minSize*int64(files)
	ws.sizes = make([]int64, files)
	var assigned int64
	for i := range weights {
		ws.sizes[i] = minSize + int64(float64(rest)*weights[i]/sum)
		assigned += ws.sizes[i]
	}
	ws.sizes[r.IntN(files)] += total - assigned // rounding: make the total exact

	exts := []string{".go", ".py", ".js", ".json", ".txt", ".md", ".c", ".bin", ".dat", ".png"}
	ws.paths = make([]string, files)
	for i := range ws.paths {
		d := dirs[r.IntN(len(dirs))].path
		ws.paths[i] = strings.TrimPrefix(fmt.Sprintf("%s/f%05d%s", d, i, exts[r.IntN(len(exts))]), "/")
	}

	// Write in parallel; content depends only on (seed, file index). The
	// files are dated an hour back, as a workspace's files mostly are: none
	// is so fresh that a capture distrusts its mtime.
	old := time.Now().Add(-time.Hour)
	if err := benchParallel(files, func(i int, buf *[]byte) error {
		if err := ws.write(i, 0, buf); err != nil {
			return err
		}
		p := filepath.Join(ws.root, filepath.FromSlash(ws.paths[i]))
		return os.Chtimes(p, old, old)
	}); err != nil {
		return nil, err
	}
	return ws, nil
}

// write writes file i with the content of the given round, keeping its size.
func (ws *benchWorkspace) write(i, round int, buf *[]byte) error {
	if int64(cap(*buf)) < ws.sizes[i] {
		*buf = make([]byte, ws.sizes[i])
	}
	b := (*buf)[:ws.sizes[i]]
	benchContent(b, benchFileRand(ws.seed, i, round))
	return os.WriteFile(filepath.Join(ws.root, filepath.FromSlash(ws.paths[i])), b, 0o644)
}

// benchParallel runs fn(0..n-1) on one goroutine per CPU, each with its own buffer.
func benchParallel(n int, fn func(i int, buf *[]byte) error) error {
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range work {
				if err := fn(i, &buf); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// changedSet picks the files an incremental round rewrites (fixed per seed).
func (ws *benchWorkspace) changedSet(n int) (idx []int, bytes int64) {
	r := rand.New(rand.NewPCG(ws.seed, 1))
	idx = r.Perm(len(ws.paths))[:n]
	sort.Ints(idx)
	for _, i := range idx {
		bytes += ws.sizes[i]
	}
	return idx, bytes
}

// rewrite gives the files idx new content (of round) of the same size.
func (ws *benchWorkspace) rewrite(idx []int, round int) error {
	return benchParallel(len(idx), func(k int, buf *[]byte) error {
		return ws.write(idx[k], round, buf)
	})
}

// ---- measurement ----------------------------------------------------------

// benchQuiesce settles the machine before a timed run: dirty pages from the
// previous step are written back (so their writeback does not land in the
// timed run) and the Go heap is collected. Nothing is evicted from the page
// cache: every run reads warm data.
func benchQuiesce() {
	_ = exec.Command("sync").Run()
	runtime.GC()
}

// benchEvict drops the page cache of every file under dir (after writing
// it back), without deleting anything: the outputs of finished runs stop
// filling memory, so the host does not reclaim memory in the middle of
// later runs, and no inode is freed (see TestCheckpointSpeedBars).
func benchEvict(dir string) error {
	_ = exec.Command("sync").Run()
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p) //nolint:gosec // G122: the benchmark's own scratch directory
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // only read

		const fadvDontneed = 4 // POSIX_FADV_DONTNEED
		if _, _, e := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontneed, 0, 0); e != 0 {
			return e
		}
		return nil
	})
}

// benchReclaimed is the number of pages the kernel has reclaimed so far
// (kswapd and direct reclaim): if it grows during a run, memory ran short.
func benchReclaimed() int64 {
	data, _ := os.ReadFile("/proc/vmstat")
	var n int64
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, " ")
		if k == "pgsteal_kswapd" || k == "pgsteal_direct" {
			x, _ := strconv.ParseInt(v, 10, 64)
			n += x
		}
	}
	return n
}

func benchShell(script string) error {
	cmd := exec.Command("bash", "-c", "set -euo pipefail; "+script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", script, err, stderr.String())
	}
	return nil
}

func benchQuote(p string) string { return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'" }

// benchOp is one measured operation: its timed runs (the warm-up excluded),
// and the CPU time other processes of the host used meanwhile.
type benchOp struct {
	name  string
	runs  []time.Duration
	cpu   []time.Duration // CPU time of this process and its children, per run
	other time.Duration
}

// benchHostBusy is the CPU time the whole host has spent busy (/proc/stat).
func benchHostBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// benchSelfCPU is the CPU time of this process and its waited-for children.
func benchSelfCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// otherCores is the average number of CPUs other processes kept busy
// during the timed runs: noise on a shared host.
func (o *benchOp) otherCores() float64 {
	var wall time.Duration
	for _, d := range o.runs {
		wall += d
	}
	if wall == 0 {
		return 0
	}
	return max(0, o.other.Seconds()/wall.Seconds())
}

func (o *benchOp) median() time.Duration { return benchMedian(o.runs) }

func benchMedian(runs []time.Duration) time.Duration {
	d := append([]time.Duration(nil), runs...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

func (o *benchOp) runList() string {
	var s []string
	for _, d := range o.runs {
		s = append(s, fmt.Sprintf("%6.3f", d.Seconds()))
	}
	return strings.Join(s, " ")
}

// timeIt quiesces (untimed), then times run. Round 0 is the warm-up and is
// not recorded.
func (o *benchOp) timeIt(round int, run func() error) error {
	benchQuiesce()
	busy, self := benchHostBusy(), benchSelfCPU()
	start := time.Now()
	if err := run(); err != nil {
		return fmt.Errorf("%s: %w", o.name, err)
	}
	if d := time.Since(start); round > 0 {
		cpu := benchSelfCPU() - self
		o.runs = append(o.runs, d)
		o.cpu = append(o.cpu, cpu)
		o.other += (benchHostBusy() - busy) - cpu
	}
	return nil
}

func benchGiB(n int64) string { return fmt.Sprintf("%.3f GiB", float64(n)/(1<<30)) }
func benchMiB(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// TestCheckpointSpeedBars measures, in one process and on one workspace, the
// three speed bars against their baselines and prints the result table.
//
// Every operation runs warm: once untimed (warm-up), then SANDBOXER_BENCH_RUNS
// times; the table shows the median. The workspace, the tar file and the
// store's objects are in the page cache throughout (the host has far more
// RAM than the data), so the comparison is of the work each tool does, not
// of the disk; a cold-cache comparison would mostly measure the disk and
// differ from run to run. Before each timed run `sync` writes back the
// previous step's dirty pages so they are not charged to the next
// operation; writeback of an operation's own output during its run is
// charged to it, baseline and store alike. Baseline and store runs
// alternate, so a drift of the host affects both.
//
// Nothing is deleted until the end (outputs stay, about 14 GiB at full
// size): on ext4 without a journal, allocating an inode scans past every
// inode of its group freed in the last 1-6 minutes, so creating files soon
// after deleting thousands is several times slower, for tar and the store
// alike, by an amount that depends on timing. For the same reason a run
// started within minutes of another one's cleanup is slower. Instead, the
// outputs of finished runs are dropped from the page cache (benchEvict), so
// they do not push the host into reclaiming memory during later runs.
func TestCheckpointSpeedBars(t *testing.T) {
	if os.Getenv("SANDBOXER_BENCH") != "1" {
		t.Skip("set SANDBOXER_BENCH=1 to run the checkpoint speed bars (see scripts/bench-checkpoint.sh)")
	}
	for _, tool := range []string{"tar", "gzip", "bash", "sync"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the baselines need it", tool)
		}
	}
	cfg, err := loadBenchConfig(20000, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: the scratch directory goes under SANDBOXER_BENCH_DIR (the
	// disk being measured) and is kept with SANDBOXER_BENCH_KEEP=1.
	root, err := os.MkdirTemp(cfg.dir, "sandboxer-bench-") //nolint:usetesting // see above
	if err != nil {
		t.Fatal(err)
	}
	if cfg.keep {
		fmt.Printf("scratch directory (kept): %s\n", root)
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(root) }) // best effort: scratch data only
	}
	out := func(format string, a ...any) { fmt.Printf(format+"\n", a...) }
	at := func(name string) string { return filepath.Join(root, name) }
	fail := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	ws, err := generateBenchWorkspace(at("ws"), cfg.files, cfg.bytes, cfg.seed)
	fail(err)
	out("workspace: %d files, %d directories, %s (%d bytes), generated in %.1fs under %s",
		cfg.files, ws.dirs, benchGiB(cfg.bytes), cfg.bytes, time.Since(start).Seconds(), root)
	out("host: %d CPUs, %s/%s, %s; warm page cache; %d timed runs per operation after 1 warm-up, median shown",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), cfg.runs)
	reclaimedBefore := benchReclaimed()
	now := time.Now()
	next := func() time.Time { now = now.Add(time.Second); return now }

	// 1. Full capture against tar -c | gzip -1. Each capture goes into a new
	// store, so nothing is deduplicated against an earlier run.
	tgz := &benchOp{name: "tar -c | gzip -1"}
	full := &benchOp{name: "full capture"}
	tgzPath := at("ws.tar.gz")
	var stores []*Store
	var fullStored int64
	for round := 0; round <= cfg.runs; round++ {
		_ = os.Remove(tgzPath) // absent in round 0; the shell rewrites it anyway
		fail(tgz.timeIt(round, func() error {
			return benchShell(fmt.Sprintf("tar -c -f - -C %s . | gzip -1 > %s", benchQuote(ws.root), benchQuote(tgzPath)))
		}))
		store, err := Open(at(fmt.Sprintf("store-%d", round)))
		fail(err)
		stores = append(stores, store)
		fail(full.timeIt(round, func() error {
			m, err := store.Capture(ws.root, CaptureOptions{ID: "full", Name: "full", SandboxID: "bench", Now: next(), Workers: cfg.workers})
			if err == nil {
				fullStored = m.StoredBytes
			}
			return err
		}))
		if round < cfg.runs { // the last store's objects are restored later: they stay cached
			fail(benchEvict(filepath.Join(store.Dir, "objects")))
		}
	}
	tgzInfo, err := os.Stat(tgzPath)
	fail(err)
	_ = os.Remove(tgzPath) // best effort: scratch space, removed with root anyway
	out("tar.gz: %s, %.1f%% of the workspace; full capture stored %s", benchMiB(tgzInfo.Size()),
		100*float64(tgzInfo.Size())/float64(cfg.bytes), benchMiB(fullStored))

	// 2. Incremental capture: each round gives the same files new content
	// (same size) and captures into the store of the same round of step 1,
	// so every timed capture finds one previous snapshot (the full one) and
	// 1% of the files changed since it.
	idx, changedBytes := ws.changedSet(cfg.changed)
	inc := &benchOp{name: fmt.Sprintf("incremental capture (%d files)", cfg.changed)}
	var incStored []int64
	for round := 0; round <= cfg.runs; round++ {
		fail(ws.rewrite(idx, round+1))
		id := fmt.Sprintf("inc-%d", round)
		fail(inc.timeIt(round, func() error {
			m, err := stores[round].Capture(ws.root, CaptureOptions{ID: id, Name: id, SandboxID: "bench", Now: next(), Workers: cfg.workers})
			if err == nil && round > 0 {
				incStored = append(incStored, m.StoredBytes)
			}
			return err
		}))
	}
	store, lastInc := stores[cfg.runs], fmt.Sprintf("inc-%d", cfg.runs)
	out("incremental: %d files rewritten, %s changed (%.2f%% of the bytes)", cfg.changed, benchMiB(changedBytes),
		100*float64(changedBytes)/float64(cfg.bytes))

	// 3. Restore of that snapshot against tar -x of the same data, each into
	// a new empty directory.
	tarPath := at("ws.tar")
	fail(benchShell(fmt.Sprintf("tar -c -f %s -C %s .", benchQuote(tarPath), benchQuote(ws.root))))
	untar := &benchOp{name: "tar -x"}
	restore := &benchOp{name: "restore"}
	for round := 0; round <= cfg.runs; round++ {
		dst := at(fmt.Sprintf("untar-%d", round))
		fail(os.Mkdir(dst, 0o755))
		fail(untar.timeIt(round, func() error {
			return benchShell(fmt.Sprintf("tar -x -f %s -C %s", benchQuote(tarPath), benchQuote(dst)))
		}))
		fail(benchEvict(dst))

		dst = at(fmt.Sprintf("restore-%d", round))
		fail(os.Mkdir(dst, 0o755))
		var res RestoreResult
		fail(restore.timeIt(round, func() error {
			res, err = store.Restore(lastInc, dst, RestoreOptions{Files: true, Overwrite: true, Workers: cfg.workers})
			return err
		}))
		if res.FilesRestored != cfg.files {
			t.Fatalf("restore wrote %d files, want %d", res.FilesRestored, cfg.files)
		}
		for _, i := range []int{idx[0], 0, cfg.files - 1} { // spot check: a changed file and two others
			a, _ := os.ReadFile(filepath.Join(ws.root, filepath.FromSlash(ws.paths[i])))
			b, _ := os.ReadFile(filepath.Join(dst, filepath.FromSlash(ws.paths[i])))
			if !bytes.Equal(a, b) || int64(len(b)) != ws.sizes[i] {
				t.Fatalf("restored %s differs from the workspace", ws.paths[i])
			}
		}
		fail(benchEvict(dst))
	}
	_ = os.Remove(tarPath) // best effort: scratch space, removed with root anyway
	if n := benchReclaimed() - reclaimedBefore; n > 0 {
		out("note: the kernel reclaimed %s of memory during the measurements; runs may have waited for it", benchMiB(n*int64(os.Getpagesize())))
	}

	// The table.
	type row struct {
		op, base *benchOp
		bar      float64
	}
	rows := []row{
		{op: tgz}, {op: full, base: tgz, bar: 1.0},
		{op: inc, base: full, bar: 0.1},
		{op: untar}, {op: restore, base: untar, bar: 1.0},
	}
	missed := 0
	verdict := func(ratio, bar float64) string {
		if ratio <= bar {
			return "PASS"
		}
		missed++
		return "FAIL"
	}
	var tbl strings.Builder
	const rowf = "%-31s %8s  %-*s %6s  %-16s %5s  %-6s %6s %6s\n"
	w := 7*cfg.runs - 1 // width of the runs column
	fmt.Fprintf(&tbl, "\n"+rowf, "operation", "median s", w, "runs s", "ratio", "vs", "bar", "result", "CPU s", "others")
	for _, r := range rows {
		med := fmt.Sprintf("%.3f", r.op.median().Seconds())
		cpu, other := fmt.Sprintf("%.2f", benchMedian(r.op.cpu).Seconds()), fmt.Sprintf("%.2f", r.op.otherCores())
		if r.base == nil {
			fmt.Fprintf(&tbl, rowf, r.op.name, med, w, r.op.runList(), "", "(baseline)", "", "", cpu, other)
			continue
		}
		ratio := r.op.median().Seconds() / r.base.median().Seconds()
		fmt.Fprintf(&tbl, rowf, r.op.name, med, w, r.op.runList(), fmt.Sprintf("%.3f", ratio), r.base.name,
			fmt.Sprintf("<=%.1f", r.bar), verdict(ratio, r.bar), cpu, other)
	}
	maxStored := benchMaxInt64(incStored)
	storedRatio := float64(maxStored) / float64(changedBytes)
	fmt.Fprintf(&tbl, rowf, "incremental StoredBytes", "", w, fmt.Sprintf("%d B", maxStored), fmt.Sprintf("%.3f", storedRatio),
		"changed bytes", "<=1.1", verdict(storedRatio, 1.1), "", "")
	fmt.Fprintf(&tbl, "\nmedian s: wall time, median of the runs; ratio: median / median of \"vs\"; CPU s: median CPU time\n"+
		"of the operation (user+sys, this process and its children); others: CPUs kept busy by other\n"+
		"processes of the host (and hypervisor steal) while the operation ran, averaged over its runs.\n")
	out("%s", tbl.String())
	if missed > 0 {
		out("%d bar(s) missed", missed)
		if cfg.strict {
			t.Errorf("%d speed bar(s) missed (SANDBOXER_BENCH_STRICT=1)", missed)
		}
	} else {
		out("all bars met")
	}
}

func benchMaxInt64(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// ---- go test -bench -------------------------------------------------------

// benchSetup generates a workspace of the benchmark size (small by default,
// see the environment at the top of this file) and a store holding its full
// snapshot.
func benchSetup(b *testing.B) (benchConfig, *benchWorkspace, *Store) {
	b.Helper()
	cfg, err := loadBenchConfig(2000, 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	ws, err := generateBenchWorkspace(filepath.Join(root, "ws"), cfg.files, cfg.bytes, cfg.seed)
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(filepath.Join(root, "store"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Capture(ws.root, CaptureOptions{ID: "base", SandboxID: "bench", Now: time.Now(), Workers: cfg.workers}); err != nil {
		b.Fatal(err)
	}
	return cfg, ws, s
}

// BenchmarkCaptureFull: a full snapshot into a new, empty store.
func BenchmarkCaptureFull(b *testing.B) {
	cfg, ws, _ := benchSetup(b)
	b.SetBytes(cfg.bytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := Open(filepath.Join(b.TempDir(), "store"))
		if err != nil {
			b.Fatal(err)
		}
		benchQuiesce()
		b.StartTimer()
		if _, err := s.Capture(ws.root, CaptureOptions{ID: "full", SandboxID: "bench", Now: time.Now(), Workers: cfg.workers}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCaptureIncremental: a snapshot after SANDBOXER_BENCH_CHANGED
// files got new content, on top of the full snapshot.
func BenchmarkCaptureIncremental(b *testing.B) {
	cfg, ws, s := benchSetup(b)
	idx, changed := ws.changedSet(cfg.changed)
	b.SetBytes(changed)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := ws.rewrite(idx, i+1); err != nil {
			b.Fatal(err)
		}
		benchQuiesce()
		b.StartTimer()
		if _, err := s.Capture(ws.root, CaptureOptions{ID: "inc", SandboxID: "bench", Now: time.Now(), Workers: cfg.workers}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := s.Delete("inc"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkRestore: restoring the full snapshot into a new empty directory.
func BenchmarkRestore(b *testing.B) {
	cfg, _, s := benchSetup(b)
	b.SetBytes(cfg.bytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dst := filepath.Join(b.TempDir(), "target")
		if err := os.Mkdir(dst, 0o755); err != nil {
			b.Fatal(err)
		}
		benchQuiesce()
		b.StartTimer()
		if _, err := s.Restore("base", dst, RestoreOptions{Files: true, Overwrite: true, Workers: cfg.workers}); err != nil {
			b.Fatal(err)
		}
	}
}
