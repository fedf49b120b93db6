// Command testregistry serves a goreleaser dist directory as a provider
// registry would, over HTTPS on a loopback address, for scripts/test-release.sh:
// the provider registry protocol's two endpoints
//
//	GET /v1/providers/NAMESPACE/TYPE/versions
//	GET /v1/providers/NAMESPACE/TYPE/VERSION/download/OS/ARCH
//
// answered from the release's <project>_<version>_SHA256SUMS (which zips
// exist, their checksums), its .sig and the registry manifest (protocol
// versions), plus the files themselves under /files/. The download answer
// names the ASCII-armored public key given with -key, so Terraform and
// OpenTofu verify the signature of SHA256SUMS and the zip's checksum as they
// do for a published release, and record the zh: hashes SHA256SUMS lists in
// the lock file.
//
// The CLIs find it through a CLI config `host` block naming its services
// (providers.v1). It makes a self-signed certificate for 127.0.0.1, written
// to -cert for SSL_CERT_FILE, and writes its address to -addr-file once it
// listens. It serves until killed.
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type release struct {
	dist      string
	namespace string
	typ       string
	protocols []string
	keyID     string
	armor     string
	sums      string            // file name of the SHA256SUMS
	zips      map[string]string // "VERSION/OS/ARCH" -> zip file name
	shasums   map[string]string // zip file name -> sha256 (hex)
}

func main() {
	var dist, namespace, typ, manifest, keyFile, keyID, certFile, addrFile string
	flag.StringVar(&dist, "dist", "", "goreleaser dist directory")
	flag.StringVar(&namespace, "namespace", "sand-boxer", "provider namespace")
	flag.StringVar(&typ, "type", "sandboxer", "provider type")
	flag.StringVar(&manifest, "manifest", "terraform-registry-manifest.json", "registry manifest (protocol versions)")
	flag.StringVar(&keyFile, "key", "", "ASCII-armored public key that signed SHA256SUMS")
	flag.StringVar(&keyID, "key-id", "", "its key ID (hex)")
	flag.StringVar(&certFile, "cert", "", "where to write the server's certificate (PEM)")
	flag.StringVar(&addrFile, "addr-file", "", "where to write host:port once listening")
	flag.Parse()
	if dist == "" || keyFile == "" || certFile == "" || addrFile == "" {
		log.Fatal("testregistry: -dist, -key, -cert and -addr-file are required")
	}

	r, err := load(dist, namespace, typ, manifest, keyFile, keyID)
	if err != nil {
		log.Fatalf("testregistry: %v", err)
	}
	cert, err := selfSigned(certFile)
	if err != nil {
		log.Fatalf("testregistry: certificate: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("testregistry: %v", err)
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
		log.Fatalf("testregistry: %v", err)
	}
	srv := &http.Server{
		Handler:           r.handler(ln.Addr().String()),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	log.Fatal(srv.ServeTLS(ln, "", ""))
}

// zipName is <project>_<version>_<os>_<arch>.zip, project terraform-provider-TYPE.
var zipName = regexp.MustCompile(`^terraform-provider-([a-z0-9-]+)_([0-9][^_]*)_([a-z0-9]+)_([a-z0-9]+)\.zip$`)

func load(dist, namespace, typ, manifestFile, keyFile, keyID string) (*release, error) {
	r := &release{dist: dist, namespace: namespace, typ: typ, keyID: keyID,
		zips: map[string]string{}, shasums: map[string]string{}}
	var m struct {
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	b, err := os.ReadFile(manifestFile)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Metadata.ProtocolVersions) == 0 {
		return nil, fmt.Errorf("%s: no metadata.protocol_versions (%v)", manifestFile, err)
	}
	r.protocols = m.Metadata.ProtocolVersions
	if b, err = os.ReadFile(keyFile); err != nil {
		return nil, err
	}
	r.armor = string(b)

	sums, err := filepath.Glob(filepath.Join(dist, "terraform-provider-"+typ+"_*_SHA256SUMS"))
	if err != nil || len(sums) != 1 {
		return nil, fmt.Errorf("want one terraform-provider-%s_*_SHA256SUMS in %s, found %d", typ, dist, len(sums))
	}
	r.sums = filepath.Base(sums[0])
	f, err := os.Open(sums[0])
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return nil, fmt.Errorf("%s: malformed line %q", r.sums, sc.Text())
		}
		if p := zipName.FindStringSubmatch(name); p != nil && p[1] == typ {
			r.zips[p[2]+"/"+p[3]+"/"+p[4]] = name
			r.shasums[name] = sum
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r.zips) == 0 {
		return nil, fmt.Errorf("%s lists no zip of terraform-provider-%s", r.sums, typ)
	}
	return r, nil
}

func (r *release) handler(addr string) http.Handler {
	base := "https://" + addr
	prefix := "/v1/providers/" + r.namespace + "/" + r.typ + "/"
	mux := http.NewServeMux()
	mux.Handle("/files/", http.StripPrefix("/files/", http.FileServer(http.Dir(r.dist))))
	mux.HandleFunc(prefix, func(w http.ResponseWriter, req *http.Request) {
		rest := strings.Split(strings.TrimPrefix(req.URL.Path, prefix), "/")
		switch {
		case len(rest) == 1 && rest[0] == "versions":
			r.versions(w)
		case len(rest) == 4 && rest[1] == "download":
			r.download(w, base, rest[0], rest[2], rest[3])
		default:
			http.NotFound(w, req)
		}
	})
	return logRequests(mux)
}

func (r *release) versions(w http.ResponseWriter) {
	type platform struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	type version struct {
		Version   string     `json:"version"`
		Protocols []string   `json:"protocols"`
		Platforms []platform `json:"platforms"`
	}
	byVersion := map[string]*version{}
	var out struct {
		Versions []*version `json:"versions"`
	}
	for k := range r.zips {
		p := strings.Split(k, "/")
		v := byVersion[p[0]]
		if v == nil {
			v = &version{Version: p[0], Protocols: r.protocols}
			byVersion[p[0]] = v
			out.Versions = append(out.Versions, v)
		}
		v.Platforms = append(v.Platforms, platform{OS: p[1], Arch: p[2]})
	}
	writeJSON(w, out)
}

func (r *release) download(w http.ResponseWriter, base, version, goos, goarch string) {
	zip, ok := r.zips[version+"/"+goos+"/"+goarch]
	if !ok {
		http.Error(w, "no such version or platform", http.StatusNotFound)
		return
	}
	type key struct {
		KeyID      string `json:"key_id"`
		ASCIIArmor string `json:"ascii_armor"`
	}
	out := map[string]any{
		"protocols":             r.protocols,
		"os":                    goos,
		"arch":                  goarch,
		"filename":              zip,
		"download_url":          base + "/files/" + zip,
		"shasums_url":           base + "/files/" + r.sums,
		"shasums_signature_url": base + "/files/" + r.sums + ".sig",
		"shasum":                r.shasums[zip],
		"signing_keys": map[string]any{
			"gpg_public_keys": []key{{KeyID: r.keyID, ASCIIArmor: r.armor}},
		},
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("testregistry: writing the answer: %v", err)
	}
}

func logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		log.Print(strconv.Quote(req.Method + " " + req.URL.Path)) // quoted: one line per request
		h.ServeHTTP(w, req)
	})
}

// selfSigned makes a certificate for 127.0.0.1 and localhost, its own CA,
// and writes it (PEM) to certFile for the clients' SSL_CERT_FILE.
func selfSigned(certFile string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sandboxer test registry"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
