//go:build !unix

package checkpoint

import (
	"fmt"
	"os"
)

// openRegular opens path for reading only when it is a regular file (see
// openfile_unix.go); without O_NOFOLLOW, the check is made before opening.
func openRegular(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	return os.Open(path)
}
