// Command pause is the pod sandbox ("pause") container of the harness cluster:
// no registry is reachable, so cluster.sh packs this static binary into an
// image of its own. Like registry.k8s.io/pause it sleeps until SIGINT or
// SIGTERM and reaps the zombies it inherits when it is PID 1 of a pod whose
// containers share its process namespace.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
