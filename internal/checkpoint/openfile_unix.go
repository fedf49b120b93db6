//go:build unix

package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openRegular opens path for reading only when it is a regular file: a
// symbolic link is not followed and a FIFO or device is not waited on. A
// workspace's content belongs to the sandbox, which can replace a file the
// scan saw by a link to the host's files or by a pipe before it is read;
// the agent reads as the SSH user (often root), so following the link would
// copy a host file into a snapshot, and opening the pipe would hang the
// capture holding the store's lock.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, not a file", path)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if err != nil {
		_ = f.Close() // only opened for reading
		return nil, err
	}
	return f, nil
}
