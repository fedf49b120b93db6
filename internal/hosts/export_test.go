package hosts

import "testing"

// SFTPWrites reports how many files s has written through sftp, so tests
// can tell which path a write took.
func SFTPWrites(s *SSH) int64 { return s.sftpWrites.Load() }

func ShellWrites(s *SSH) int64 { return s.shellWrites.Load() }

// UploadShell is Upload through the shell pipeline whatever the transport,
// for tests and benchmarks that compare the two paths.
var UploadShell = uploadShell

// ShellsStarted reports how many shells s has started, so tests can tell
// that commands shared them.
func ShellsStarted(s *SSH) int64 { return s.shellsStarted.Load() }

// SessionsRun reports how many commands s has run in a session of their
// own (not in a shell).
func SessionsRun(s *SSH) int64 { return s.sessionsRun.Load() }

// InProcessSSH is a transport, capped at maxSessions (0: the default), to
// an SSH server in the test process (inprocess_test.go).
func InProcessSSH(t *testing.T, maxSessions int) *SSH {
	t.Helper()
	return startInProcessServer(t, nil).transport(t, maxSessions)
}
