package hosts

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// silentServer completes SSH handshakes and then answers nothing: as a host
// whose sshd processes were killed while the TCP connection stayed open.
// It returns the config to reach it and a count of connections accepted.
func silentServer(t *testing.T) (SSHConfig, *atomic.Int32) {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	scfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
	scfg.AddHostKey(hostSigner)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				sc, _, reqs, err := ssh.NewServerConn(c, scfg)
				if err != nil {
					return
				}
				t.Cleanup(func() { _ = sc.Close() })
				// Neither channel opens nor requests (keepalives) are ever
				// answered.
				for range reqs {
				}
			}()
		}
	}()
	_, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	return SSHConfig{Name: "silent", Address: l.Addr().String(), User: "u", PrivateKey: pem.EncodeToMemory(block),
		HostKey: string(ssh.MarshalAuthorizedKey(hostSigner.PublicKey())), DialTimeout: 10 * time.Second}, &accepted
}

// A connection that stops answering is closed by its keepalive: the
// command's wait for a session ends, it redials once, and fails saying
// why, instead of waiting forever.
func TestSilentConnectionIsGivenUp(t *testing.T) {
	cfg, accepted := silentServer(t)
	defer func(i, d time.Duration) { keepAliveInterval, keepAliveTimeout = i, d }(keepAliveInterval, keepAliveTimeout)
	keepAliveInterval, keepAliveTimeout = 50*time.Millisecond, 200*time.Millisecond
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = tr.Run(ctx, "true", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Run on a silent connection: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("gave up after %s", took)
	}
	if n := accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want the first and one redial", n)
	}
}

// The caller's deadline ends the wait for a session, answer or not.
func TestSilentConnectionHonoursTheContext(t *testing.T) {
	cfg, _ := silentServer(t)
	tr, err := NewSSH(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tr.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := tr.Run(ctx, "true", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run past its deadline: %v", err)
	}
}
