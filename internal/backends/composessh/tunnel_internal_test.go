package composessh

import (
	"strings"
	"testing"
)

// Which address of a service's containers a tunnel goes to, from what
// serviceAddressScript prints.
func TestPickServiceIP(t *testing.T) {
	const project = "sbx-0123456789ab"
	for name, c := range map[string]struct{ out, want, err string }{
		"own network before an external one": {
			out:  "running|sbx-0123456789ab_default|shared=172.30.0.9= sbx-0123456789ab_default=10.213.0.3= \n",
			want: "10.213.0.3"},
		"an external network alone": {
			out:  "running|shared|shared=172.30.0.9= \n",
			want: "172.30.0.9"},
		"the running replica": {
			out:  "exited|bridge|sbx-0123456789ab_default== \nrunning|bridge|sbx-0123456789ab_default=10.213.0.4= \n",
			want: "10.213.0.4"},
		"IPv6 only": {
			out:  "running|bridge|sbx-0123456789ab_v6==fd00::5 \n",
			want: "fd00::5"},
		"IPv4 before IPv6": {
			out:  "running|bridge|sbx-0123456789ab_v6==fd00::5 sbx-0123456789ab_default=10.213.0.3=fd00::6 \n",
			want: "10.213.0.3"},
		"host network": {
			out:  "running|host|host== \n",
			want: "127.0.0.1"},
		"no network": {
			out: "running|none|none== \n",
			err: "has no network (network_mode: none)"},
		"another container's network": {
			out: "running|container:4f2a|\n",
			err: "shares the network of another container (network_mode: container:4f2a)"},
		"no address": {
			out: "running|bridge|sbx-0123456789ab_default== \n",
			err: "has a running container with no IP address"},
		"stopped": {
			out: "exited|bridge|sbx-0123456789ab_default== \npaused|bridge|sbx-0123456789ab_default=10.213.0.4= \n",
			err: "is not running (its container is exited, paused)"},
		"gone": {
			out: "",
			err: "has no container"},
	} {
		got, err := pickServiceIP(c.out, project)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %q, %v; want an error saying %q", name, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: got %q, %v; want %s", name, got, err, c.want)
		}
	}
}
