package deploy

import (
	"fmt"
	"os"
	"os/exec"
)

// Build builds the container image for tag.
func Build(tag string, dryRun bool) error {
	args := []string{"build", "-t", "shortlink:" + tag, "."}
	if dryRun {
		fmt.Println("docker", args)
		return nil
	}
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
