// Command gpustack-ssh-server runs in the SSH sidecar of an Instance's Pod (the image gpustack/ssh-server):
//
//	gpustack-ssh-server serve     writes the Instance's authorized keys and runs sshd (the image's entrypoint)
//	gpustack-ssh-server session   what sshd forces on every session: enters it into the main container
package main

import (
	"fmt"
	"os"

	"github.com/gpustack/gpustack-operator/sshsidecar"
)

func main() {
	commands := map[string]func() error{"serve": sshsidecar.Serve, "session": sshsidecar.Enter}
	if len(os.Args) != 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: gpustack-ssh-server <serve|session>")
		os.Exit(2)
	}
	if err := commands[os.Args[1]](); err != nil {
		fmt.Fprintf(os.Stderr, "gpustack-ssh-server %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
