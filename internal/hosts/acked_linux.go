package hosts

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// ackedWithin reports whether the peer of a TCP connection acknowledged
// data within d (TCP_INFO's last_ack_recv): on a link a transfer
// saturates, acknowledgements keep coming while a keepalive waits behind
// the data queued ahead of it.
func ackedWithin(c net.Conn, d time.Duration) bool {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	var acked bool
	_ = raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		acked = err == nil && info.Unacked > 0 && time.Duration(info.Last_ack_recv)*time.Millisecond < d
	}) // a closed connection acknowledged nothing
	return acked
}
