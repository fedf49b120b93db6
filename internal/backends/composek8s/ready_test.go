package composek8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet retries a config error caused by its own slow cache, so the
// wait goes on; a missing ConfigMap or an image it cannot pull ends it.
func TestWaitingForGood(t *testing.T) {
	for _, tc := range []struct {
		reason, message string
		final           bool
	}{
		{"CreateContainerConfigError", "failed to sync configmap cache: timed out waiting for the condition", false},
		{"CreateContainerConfigError", "failed to sync secret cache: timed out waiting for the condition", false},
		{"CreateContainerConfigError", `configmap "web-env" not found`, true},
		{"CreateContainerConfigError", `couldn't find key PASSWORD in Secret sbx-1/db`, true},
		{"ErrImageNeverPull", "Container image \"x:1\" is not present with pull policy of Never", true},
		{"CrashLoopBackOff", "back-off 10s restarting failed container", true},
		{"ContainerCreating", "", false},
		{"PodInitializing", "", false},
	} {
		got := waitingForGood(&corev1.ContainerStateWaiting{Reason: tc.reason, Message: tc.message})
		if got != tc.final {
			t.Errorf("%s %q: final = %v, want %v", tc.reason, tc.message, got, tc.final)
		}
	}
}
