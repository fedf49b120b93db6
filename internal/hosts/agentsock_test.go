package hosts

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// countingAgent serves a real agent keyring on a unix socket and counts
// the connections clients open and close.
type countingAgent struct {
	mu             sync.Mutex
	opened, closed int
	allClosed      chan struct{} // one value per closed connection
}

func (a *countingAgent) serve(l net.Listener, keyring agent.Agent) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		a.mu.Lock()
		a.opened++
		a.mu.Unlock()
		go func() {
			_ = agent.ServeAgent(keyring, c) // returns when the client closes
			a.mu.Lock()
			a.closed++
			a.mu.Unlock()
			a.allClosed <- struct{}{}
		}()
	}
}

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
	ag := &countingAgent{allClosed: make(chan struct{}, 16)}
	go ag.serve(al, keyring)
	t.Setenv("SSH_AUTH_SOCK", sock)

	// An in-process SSH server that accepts exactly the agent's key.
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	scfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(sshPub.Marshal()) {
			return nil, nil
		}
		return nil, errNotAuthorized
	}}
	scfg.AddHostKey(hostSigner)
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sl.Close() }()
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			go func() {
				sc, chans, reqs, err := ssh.NewServerConn(c, scfg)
				if err != nil {
					return
				}
				go ssh.DiscardRequests(reqs)
				for ch := range chans {
					_ = ch.Reject(ssh.Prohibited, "no channels here")
				}
				_ = sc.Close()
			}()
		}
	}()

	cfg := SSHConfig{Name: "agent-test", Address: sl.Addr().String(), User: "u", UseAgent: true,
		HostKey: string(ssh.MarshalAuthorizedKey(hostSigner.PublicKey())), DialTimeout: 10 * time.Second}
	for range 3 {
		c, closers, err := dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		closeAll(append(closers, c))
	}
	// Each close is signalled; wait for three, or fail at the deadline.
	deadline := time.After(10 * time.Second)
wait:
	for range 3 {
		select {
		case <-ag.allClosed:
		case <-deadline:
			break wait
		}
	}
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if ag.opened != 3 || ag.closed != 3 {
		t.Fatalf("3 handshakes opened %d agent connections and closed %d; want 3 and 3", ag.opened, ag.closed)
	}
}

var errNotAuthorized = errString("not authorized")

type errString string

func (e errString) Error() string { return string(e) }
