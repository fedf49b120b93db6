package hosts

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeyVerifier returns the callback that checks a host's key, and the key
// algorithms to ask the server for (so a host with several keys presents the
// one we know rather than failing as a mismatch).
func hostKeyVerifier(cfg SSHConfig) (ssh.HostKeyCallback, []string, error) {
	switch {
	case cfg.HostKey != "":
		pinned, _, _, _, err := ssh.ParseAuthorizedKey([]byte(cfg.HostKey))
		if err != nil {
			return nil, nil, fmt.Errorf("host %q: unable to parse host_key (expected \"ssh-ed25519 AAAA...\"): %w", cfg.Name, err)
		}
		cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			if string(key.Marshal()) != string(pinned.Marshal()) {
				return fmt.Errorf("host key mismatch for %s: the server presented %s %s, but host_key pins %s %s",
					hostname, key.Type(), ssh.FingerprintSHA256(key), pinned.Type(), ssh.FingerprintSHA256(pinned))
			}
			return nil
		}
		return cb, algorithmsFor(pinned.Type()), nil
	case cfg.InsecureIgnoreHostKey:
		return ssh.InsecureIgnoreHostKey(), nil, nil //nolint:gosec // G106: only when the user set insecure_ignore_host_key (documented as for throwaway test hosts)
	}

	file := cfg.KnownHostsFile
	if file == "" {
		home, _ := os.UserHomeDir()
		file = filepath.Join(home, ".ssh", "known_hosts")
	}
	if _, err := os.Stat(file); err != nil {
		return nil, nil, fmt.Errorf("host %q: no way to verify the host key: known_hosts file %s is not readable (%v); "+
			"set known_hosts_file or host_key (insecure_ignore_host_key = true skips verification, not recommended)", cfg.Name, file, err)
	}
	kh, err := knownhosts.New(file)
	if err != nil {
		return nil, nil, fmt.Errorf("host %q: unable to read known_hosts file %s: %w", cfg.Name, file, err)
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := kh(hostname, remote, key)
		var keyErr *knownhosts.KeyError
		if errors.As(err, &keyErr) {
			if len(keyErr.Want) == 0 {
				return fmt.Errorf("unknown host key for %s (%s %s): it is not in %s; add it (ssh-keyscan) or pin it with host_key",
					hostname, key.Type(), ssh.FingerprintSHA256(key), file)
			}
			return fmt.Errorf("host key mismatch for %s: the server presented %s %s, which does not match %s (line %d); "+
				"the host was reinstalled or someone is intercepting the connection",
				hostname, key.Type(), ssh.FingerprintSHA256(key), file, keyErr.Want[0].Line)
		}
		return err
	}
	return cb, knownAlgorithms(kh, cfg.Address), nil
}

// knownAlgorithms lists the key types known_hosts holds for address, by
// asking the callback about a key it cannot know.
func knownAlgorithms(kh ssh.HostKeyCallback, address string) []string {
	var keyErr *knownhosts.KeyError
	err := kh(knownhosts.Normalize(address), &net.TCPAddr{}, probeKey{})
	if !errors.As(err, &keyErr) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range keyErr.Want {
		for _, a := range algorithmsFor(k.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// probeKey is a key no known_hosts file holds.
type probeKey struct{}

func (probeKey) Type() string                            { return "sandboxer-probe" }
func (probeKey) Marshal() []byte                         { return []byte(strings.Repeat("\x00", 8)) }
func (probeKey) Verify(_ []byte, _ *ssh.Signature) error { return errors.New("probe key") }
