package main

import (
	"os"
	"strings"
	"testing"
)

// clearLogEnv removes every TF_LOG* variable for the test, restoring them after.
func clearLogEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TF_LOG") {
			t.Setenv(k, "") // restored after the test
			if err := os.Unsetenv(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
		t.Setenv(k, "")
		if err := os.Unsetenv(k); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQuietLogsWhenNobodyAsked(t *testing.T) {
	clearLogEnv(t)
	quietLogs()
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER"} {
		if v := os.Getenv(k); v != "OFF" {
			t.Errorf("%s=%q with no TF_LOG set, want OFF", k, v)
		}
	}
}

func TestLogsAsAskedWhenAnyTFLogIsSet(t *testing.T) {
	clearLogEnv(t)
	t.Setenv("TF_LOG_PROVIDER", "DEBUG")
	quietLogs()
	if v := os.Getenv("TF_LOG_PROVIDER"); v != "DEBUG" {
		t.Errorf("TF_LOG_PROVIDER=%q, want DEBUG as the user set it", v)
	}
	for _, k := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK"} {
		if v, ok := os.LookupEnv(k); ok {
			t.Errorf("%s=%q set although the user asked for logs", k, v)
		}
	}
}
