package composek8s

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sand-boxer/terraform-provider-sandboxer/internal/composefile"
)

// maxObjectBytes is what a ConfigMap or Secret holds at most (etcd's
// limit on one object, with room for its metadata).
const maxObjectBytes = 1000 * 1024

// mounts: named volumes become claims, paths in the repo the repo's claim
// with a subPath, tmpfs and anonymous volumes emptyDirs.
func (c *converter) mounts(name string, svc types.ServiceConfig, ctr *corev1.Container, pod *corev1.PodSpec) {
	at := []string{"services", name, "volumes"}
	if c.claim == nil {
		c.claim = map[string]bool{}
	}
	addVolume := func(v corev1.Volume) {
		if !slices.ContainsFunc(pod.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
			pod.Volumes = append(pod.Volumes, v)
		}
	}
	for i, v := range svc.Volumes {
		m := corev1.VolumeMount{MountPath: v.Target, ReadOnly: v.ReadOnly}
		switch {
		case v.Type == types.VolumeTypeVolume && v.Source != "":
			c.claim[v.Source] = true
			m.Name = "volume-" + claimOf(v.Source)
			if v.Volume != nil {
				m.SubPath = v.Volume.Subpath
			}
			addVolume(corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimOf(v.Source)}}})
		case v.Type == types.VolumeTypeVolume:
			m.Name = "anonymous-" + strconv.Itoa(i)
			addVolume(corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		case v.Type == types.VolumeTypeTmpfs:
			m.Name = "tmpfs-" + strconv.Itoa(i)
			ed := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
			if v.Tmpfs != nil && v.Tmpfs.Size > 0 {
				ed.SizeLimit = resource.NewQuantity(int64(v.Tmpfs.Size), resource.BinarySI)
			}
			addVolume(corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
		case v.Type == types.VolumeTypeBind && c.l.Repo != "" && composefile.Within(c.l.Repo, v.Source):
			rel, _ := filepath.Rel(c.l.Repo, v.Source)
			c.repo = true
			m.Name = "repo"
			if rel != "." {
				m.SubPath = filepath.ToSlash(rel)
			}
			addVolume(corev1.Volume{Name: "repo", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: RepoClaim}}})
		case v.Type == types.VolumeTypeBind:
			c.errorf(at, "service %q: bind mount of %s: a pod reaches no path of a node; mount a path in the repo (uploaded into the sandbox's repo volume) or a named volume", name, v.Source)
			continue
		default:
			c.errorf(at, "service %q: a %s mount has no counterpart on a cluster; use a named volume", name, v.Type)
			continue
		}
		ctr.VolumeMounts = append(ctr.VolumeMounts, m)
	}
	for i, t := range svc.Tmpfs {
		path, _, _ := strings.Cut(t, ":")
		n := "tmpfs-list-" + strconv.Itoa(i)
		addVolume(corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: n, MountPath: path})
	}
	if svc.ShmSize > 0 {
		addVolume(corev1.Volume{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(int64(svc.ShmSize), resource.BinarySI)}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "shm", MountPath: "/dev/shm"})
	}
}

// files: configs and secrets, each an object of its own, mounted as a file.
func (c *converter) files(svc types.ServiceConfig, ctr *corev1.Container, pod *corev1.PodSpec) {
	for _, ref := range svc.Configs {
		obj, ok := c.p.Configs[ref.Source]
		target := ref.Target
		if target == "" {
			target = "/" + ref.Source
		}
		if !ok || !c.fileObject("configs", ref.Source, types.FileObjectConfig(obj)) {
			continue
		}
		n := "config-" + ref.Source
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}, DefaultMode: mode(ref.Mode)}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: n, MountPath: target, SubPath: "content", ReadOnly: true})
	}
	for _, ref := range svc.Secrets {
		obj, ok := c.p.Secrets[ref.Source]
		target := ref.Target
		if target == "" {
			target = ref.Source
		}
		if !strings.HasPrefix(target, "/") {
			target = "/run/secrets/" + target
		}
		if !ok || !c.fileObject("secrets", ref.Source, types.FileObjectConfig(obj)) {
			continue
		}
		n := "secret-" + ref.Source
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: n, DefaultMode: mode(ref.Mode)}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: n, MountPath: target, SubPath: "content", ReadOnly: true})
	}
}

func mode(m *types.FileMode) *int32 {
	if m == nil {
		return nil
	}
	v := clamp32(int64(*m))
	return &v
}

// fileObject makes the ConfigMap or Secret of a top-level config or
// secret (kind) the first time a service mounts it; false when it cannot.
func (c *converter) fileObject(kind, key string, obj types.FileObjectConfig) bool {
	n := strings.TrimSuffix(kind, "s") + "-" + key
	made := slices.ContainsFunc(c.o.ConfigMaps, func(x *corev1.ConfigMap) bool { return x.Name == n }) ||
		slices.ContainsFunc(c.o.Secrets, func(x *corev1.Secret) bool { return x.Name == n })
	if made {
		return true
	}
	at := []string{kind, key}
	var data []byte
	switch {
	case bool(obj.External):
		c.errorf(at, "%s %q is external: a sandbox's namespace holds its own; write `file:` or `content:`", kind, key)
		return false
	case obj.Content != "":
		data = []byte(obj.Content)
	case obj.Environment != "":
		v, ok := c.p.Environment[obj.Environment]
		if !ok {
			c.errorf(at, "%s %q: variable %s is not set", kind, key, obj.Environment)
			return false
		}
		data = []byte(v)
	case obj.File != "":
		if c.l.Repo == "" || !composefile.Within(c.l.Repo, obj.File) {
			c.errorf(at, "%s %q: file %s is outside the repo; a cluster sandbox reads only the repo's files", kind, key, obj.File)
			return false
		}
		b, err := os.ReadFile(obj.File)
		if err != nil {
			c.errorf(at, "%s %q: %v", kind, key, err)
			return false
		}
		data = b
	default:
		c.errorf(at, "%s %q has no `file`, `content` or `environment`", kind, key)
		return false
	}
	if len(data) > maxObjectBytes {
		c.errorf(at, "%s %q is %d bytes: a cluster object holds at most %d; mount it from the repo instead", kind, key, len(data), maxObjectBytes)
		return false
	}
	if kind == "secrets" {
		c.o.Secrets = append(c.o.Secrets, &corev1.Secret{ObjectMeta: c.meta(n), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"content": data}})
	} else {
		c.o.ConfigMaps = append(c.o.ConfigMaps, &corev1.ConfigMap{ObjectMeta: c.meta(n), BinaryData: map[string][]byte{"content": data}})
	}
	return true
}

// claimMax is the longest claim name: a pod's volume of it is
// "volume-<claim>", a DNS-1123 label of at most 63 characters.
const claimMax = 63 - len("volume-")

// claimOf is the claim of compose volume v: v itself when it is a
// DNS-1123 label short enough, else v lowercased, with '-' for what a
// label may not hold, and a hash of v, so that two volumes (db_data and
// db-data) never share a claim. Compose volume names are the file's own,
// never resolved: any name converts.
func claimOf(v string) string {
	if len(v) <= claimMax && len(validation.IsDNS1123Label(v)) == 0 {
		return v
	}
	clean := strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		default:
			return '-'
		}
	}, v), "-")
	sum := sha256.Sum256([]byte(v))
	hash := hex.EncodeToString(sum[:4])
	if len(clean) > claimMax-len(hash)-1 {
		clean = strings.TrimRight(clean[:claimMax-len(hash)-1], "-")
	}
	if clean == "" {
		return "v-" + hash
	}
	return clean + "-" + hash
}

// volumes makes the claims the services mount: each named volume's, and
// the repo's when a service mounts a path in it.
func (c *converter) volumes() {
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		if size == "" {
			size = "1Gi"
		}
		q, err := resource.ParseQuantity(size)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("volume size %q: %w", size, err))
			return nil
		}
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: c.meta(name), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		}}
		if c.opts.StorageClass != "" {
			sc := c.opts.StorageClass
			pvc.Spec.StorageClassName = &sc
		}
		return pvc
	}
	for _, v := range slices.Sorted(maps.Keys(c.claim)) {
		if v == RepoClaim {
			c.errorf([]string{"volumes", v}, "volume %q: the name is the sandbox's repo volume's; rename it", v)
			continue
		}
		if pvc := claim(claimOf(v), c.opts.VolumeSize); pvc != nil {
			c.o.Claims = append(c.o.Claims, pvc)
		}
	}
	if c.repo {
		if pvc := claim(RepoClaim, c.opts.RepoSize); pvc != nil {
			c.o.Claims = append(c.o.Claims, pvc)
		}
	}
}

// networkPolicies: nothing talks into the namespace but to a published
// port; within it, a pod takes traffic from the pods that share one of
// its compose networks.
func (c *converter) networkPolicies() {
	ingress := networkingv1.PolicyTypeIngress
	c.o.NetworkPolicies = append(c.o.NetworkPolicies, &networkingv1.NetworkPolicy{ObjectMeta: c.meta("default-deny"),
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}, PolicyTypes: []networkingv1.PolicyType{ingress}}})
	nets := map[string]bool{}
	for _, svc := range c.p.Services {
		for n := range svc.Networks {
			nets[n] = true
		}
		if len(svc.Networks) == 0 {
			nets["default"] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(nets)) {
		sel := metav1.LabelSelector{MatchLabels: map[string]string{labelNetwork + n: "true"}}
		c.o.NetworkPolicies = append(c.o.NetworkPolicies, &networkingv1.NetworkPolicy{ObjectMeta: c.meta("network-" + policyName(n)),
			Spec: networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: []networkingv1.PolicyType{ingress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &sel}}}}}})
	}
	byService := map[string][]networkingv1.NetworkPolicyPort{}
	for _, p := range c.o.Published {
		svc := strings.TrimPrefix(p.Service, publishedPrefix)
		proto := corev1.Protocol(strings.ToUpper(p.Protocol))
		port := intstr.FromInt32(clamp32(int64(p.Target)))
		byService[svc] = append(byService[svc], networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	for _, svc := range slices.Sorted(maps.Keys(byService)) {
		c.o.NetworkPolicies = append(c.o.NetworkPolicies, &networkingv1.NetworkPolicy{ObjectMeta: c.meta(publishedPrefix + svc),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelService: svc}},
				PolicyTypes: []networkingv1.PolicyType{ingress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: byService[svc]}}}})
	}
}

// policyName is a compose network's name as part of an object name.
func policyName(n string) string {
	return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(n))
}
