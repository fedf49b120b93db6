package composessh

import (
	"slices"
	"testing"
)

// What `compose config` prints on a host, v2 and v1 (captured from
// docker compose 2.40.3 and docker-compose 1.29.2 for the same file): a
// restored stack's services and the networks that get pool subnets.
func TestProjectFromHost(t *testing.T) {
	v2 := `name: sbx-x
services:
  db:
    image: busybox
    networks:
      back: null
      default: null
  web:
    command:
      - sleep
      - "1000"
    image: busybox
    networks:
      default: null
networks:
  back:
    name: sbx-x_back
  default:
    name: sbx-x_default
`
	v1 := `networks:
  back: {}
  fixed:
    ipam:
      config:
      - subnet: 10.99.0.0/24
services:
  db:
    image: busybox
    networks:
      back: null
      default: null
  web:
    command:
    - sleep
    - '1000'
    image: busybox
version: '3.9'
`
	for name, raw := range map[string]string{"v2": v2, "v1": v1} {
		st, err := projectFromHost([]byte(raw))
		services, networks := st.plan.Services, st.networks
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(services, []string{"db", "web"}) {
			t.Errorf("%s: services %v, want [db web]", name, services)
		}
		if !slices.Equal(networks, []string{"back", "default"}) {
			t.Errorf("%s: managed networks %v, want [back default] (fixed keeps its own subnet)", name, networks)
		}
	}
	if _, err := projectFromHost([]byte("services: [")); err == nil {
		t.Error("broken YAML was accepted")
	}
}
