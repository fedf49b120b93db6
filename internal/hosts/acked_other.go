//go:build !linux

package hosts

import (
	"net"
	"time"
)

// ackedWithin is false where TCP_INFO is not read: only bytes the
// connection moves show it alive (activeConn).
func ackedWithin(net.Conn, time.Duration) bool { return false }
