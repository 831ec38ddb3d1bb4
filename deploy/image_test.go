// Package deploy's tests check the container images: deploy/Dockerfile,
// the herdlab image a user runs (the static binary alone, FROM scratch),
// and deploy/k8s, whose Jobs run herdlab with a shell.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// instructions returns a Dockerfile's instructions, one a line, without
// comments.
func instructions(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var lines []string
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestTheImageIsTheBinaryAlone: deploy/Dockerfile starts from no base
// image (so building it pulls nothing) and copies the binary make image
// builds, from the build context make image gives it: the binary's
// folder.
func TestTheImageIsTheBinaryAlone(t *testing.T) {
	lines := instructions(t, "Dockerfile")
	var from, copies []string
	for _, l := range lines {
		switch strings.ToUpper(strings.Fields(l)[0]) {
		case "FROM":
			from = append(from, l)
		case "COPY", "ADD":
			copies = append(copies, l)
		case "RUN":
			t.Errorf("deploy/Dockerfile: %q: the image is built outside docker, with nothing to run in it", l)
		}
	}
	assert.Equal(t, []string{"FROM scratch"}, from, "deploy/Dockerfile pulls a base image")
	assert.Equal(t, []string{"COPY herdlab /herdlab"}, copies)
	assert.Contains(t, lines, `ENTRYPOINT ["/herdlab"]`)
	assert.Contains(t, lines, "WORKDIR /work", "the folder a user mounts theirs at")

	makefile, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	image := regexp.MustCompile(`(?m)^image:\n((?:\t.*\n)+)`).FindSubmatch(makefile)
	require.NotNil(t, image, "the Makefile has an image target")
	recipe := strings.ReplaceAll(string(image[1]), "\\\n", "")
	assert.Contains(t, recipe, "CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath")
	assert.Contains(t, recipe, "-o bin/linux-$(IMAGE_ARCH)/herdlab ./cmd/herdlab",
		"make image writes the binary where its docker build finds it")
	assert.Regexp(t, `docker build .*-f deploy/Dockerfile .*-t \$\(IMAGE\):\$\(VERSION\) -t \$\(IMAGE\):latest bin/linux-\$\(IMAGE_ARCH\)\n`, recipe,
		"make image builds deploy/Dockerfile in the binary's folder, tagged with the version and latest")
}

// TestTheKubernetesJobsHaveTheirShell: deploy/k8s's Jobs run their
// commands through sh, which the herdlab image does not have: each runs
// the image deploy/k8s/Dockerfile builds, which has one.
func TestTheKubernetesJobsHaveTheirShell(t *testing.T) {
	var from []string
	for _, l := range instructions(t, "k8s/Dockerfile") {
		if strings.HasPrefix(strings.ToUpper(l), "FROM ") {
			from = append(from, l)
		}
	}
	require.Equal(t, []string{"FROM busybox:stable"}, from, "deploy/k8s/Dockerfile: the base with the shell the Jobs use")

	jobs, err := filepath.Glob("k8s/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, jobs)
	seen := 0
	for _, file := range jobs {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var doc struct {
				Kind string
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name    string
								Image   string
								Command []string
							}
						}
					}
				}
			}
			if err := dec.Decode(&doc); err != nil {
				break
			}
			for _, c := range doc.Spec.Template.Spec.Containers {
				seen++
				if len(c.Command) > 0 && c.Command[0] == "sh" {
					assert.Equal(t, "herdlab-k8s:latest", c.Image, "%s, container %s runs sh: the image with a shell", file, c.Name)
				}
			}
		}
	}
	assert.Equal(t, 2, seen, "the sweep's and the merge's containers")
}

// TestTheImageRuns builds the image with make image and runs herdlab
// version and herdlab run on a shipped scenario in it, with the user's
// folder mounted. It needs a docker daemon: without one it skips, unless
// HERDLAB_REQUIRE_DOCKER is set.
func TestTheImageRuns(t *testing.T) {
	if err := dockerAnswers(); err != nil {
		if os.Getenv("HERDLAB_REQUIRE_DOCKER") != "" {
			t.Fatalf("HERDLAB_REQUIRE_DOCKER is set and no docker daemon answers: %v", err)
		}
		t.Skipf("skipped: no docker daemon answers (%v); the image is not built or run (set HERDLAB_REQUIRE_DOCKER=1 to fail instead)", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make image needs make: %v", err)
	}
	image := fmt.Sprintf("herdlab-imagetest-%d", os.Getpid())
	const version = "v0.0.0-imagetest"
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		exec.Command("docker", "rmi", "-f", image+":"+version, image+":latest").Run()
	})
	out, err := command(ctx, "..", "make", "--no-print-directory", "image", "IMAGE="+image, "VERSION="+version, "COMMIT=0123456789abcdef")
	require.NoError(t, err, "make image:\n%s", out)

	layers, err := command(ctx, "", "docker", "image", "inspect", "--format", "{{len .RootFS.Layers}}", image+":latest")
	require.NoError(t, err, layers)
	assert.Equal(t, "1", strings.TrimSpace(layers), "the image is one layer, the binary")
	tagged, err := command(ctx, "", "docker", "image", "inspect", "--format", "{{.Id}}", image+":"+version)
	require.NoError(t, err, "make image tags the version: %s", tagged)

	out, err = command(ctx, "", "docker", "run", "--rm", image, "version")
	require.NoError(t, err, out)
	assert.Regexp(t, regexp.MustCompile(`^herdlab `+regexp.QuoteMeta(version)+` \(commit 0123456789abcdef, go[^,]+, linux/`+runtime.GOARCH+`\)\n$`), out)

	// The user's folder, mounted at the working folder /work: a run reads
	// its scenario there and writes its outputs there, as the user.
	dir := t.TempDir()
	scenario, err := os.ReadFile("../scenarios/fixed-delay.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.yaml"), scenario, 0o644))
	out, err = command(ctx, "", "docker", "run", "--rm", "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"-v", dir+":/work", image, "run", "x.yaml", "--out", "out")
	require.NoError(t, err, "herdlab run in the image:\n%s", out)
	assert.Contains(t, out, "fixed-delay")
	for _, f := range []string{"report.md", "load.png"} {
		info, err := os.Stat(filepath.Join(dir, "out", f))
		if assert.NoError(t, err, "herdlab run in the image wrote no %s into the mounted folder", f) {
			assert.Positive(t, info.Size(), f)
		}
	}
}

// dockerAnswers says why no docker daemon answers, or nil.
func dockerAnswers() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("no docker command: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker version: %v: %s", err, firstLine(out))
	}
	return nil
}

func firstLine(b []byte) string {
	l, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return l
}

// command runs name with args in dir ("" for the test's) and returns its
// combined output.
func command(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
