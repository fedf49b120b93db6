package hosts

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// A handshake with use_agent opens the agent's socket and closes it when
// the handshake is over: a provider making many connections keeps no agent
// sockets open.
func TestAgentSocketClosedAfterHandshake(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	al, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = al.Close() }()
	var opened atomic.Int32
	closed := make(chan struct{}, 16) // one value per connection the client closed
	go func() {
		for {
			c, err := al.Accept()
			if err != nil {
				return
			}
			opened.Add(1)
			go func() {
				_ = agent.ServeAgent(keyring, c) // returns when the client closes
				closed <- struct{}{}
			}()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)

	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	cfg := startInProcessServer(t, func(s *inProcessServer) { s.authorized = sshPub }).cfg
	cfg.PrivateKey, cfg.UseAgent, cfg.DialTimeout = nil, true, 10*time.Second
	for range 3 {
		c, closers, _, err := dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		closeAll(append(closers, c))
	}
	deadline := time.After(10 * time.Second)
	for i := range 3 {
		select {
		case <-closed:
		case <-deadline:
			t.Fatalf("3 handshakes opened %d agent connections and closed %d; want 3 and 3", opened.Load(), i)
		}
	}
	if n := opened.Load(); n != 3 {
		t.Fatalf("3 handshakes opened %d agent connections, want 3", n)
	}
}
