package sshsidecar

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuthorizedKeys(t *testing.T) {
	cases := map[string]struct {
		reason string
		files  map[string]string
		want   string
	}{
		"SecretVolume": {
			reason: "Every key of the Secret is accepted, in name order, each on its own line; the volume's hidden entries are not keys.",
			files:  map[string]string{"b": "ssh-ed25519 BBB b@x", "a": "ssh-ed25519 AAA a@x\n", "..data/c": "ssh-ed25519 CCC"},
			want:   "ssh-ed25519 AAA a@x\nssh-ed25519 BBB b@x\n",
		},
		"EmptyKey": {
			reason: "An empty key file adds no line.",
			files:  map[string]string{"a": " \n"},
			want:   "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, data := range tc.files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := AuthorizedKeys(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s\nAuthorizedKeys(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if got, err := AuthorizedKeys(filepath.Join(t.TempDir(), "none")); err != nil || len(got) != 0 {
		t.Errorf("AuthorizedKeys(missing) = %q, %v; want no keys and no error (an Instance without a key)", got, err)
	}
}

func TestMainProcess(t *testing.T) {
	const sandbox, sidecar, main = "4:devices:/pod/sandbox\n", "4:devices:/pod/sshd\n", "4:devices:/pod/main\n"
	cases := map[string]struct {
		reason string
		procs  map[int]string
		self   int
		want   int
		err    bool
	}{
		"FirstOfMain": {
			reason: "Main's first process is the lowest pid in neither the sandbox's cgroup nor this process's.",
			procs:  map[int]string{1: sandbox, 7: main, 9: sidecar, 12: main, 30: sidecar},
			self:   30, want: 7,
		},
		"SessionsAreNotMain": {
			reason: "A session entered earlier (in the sidecar's cgroup, at a lower pid than a restarted main) is passed over.",
			procs:  map[int]string{1: sandbox, 9: sidecar, 10: sidecar, 40: main, 41: sidecar},
			self:   41, want: 40,
		},
		"MainNotRunning": {
			reason: "With only the sandbox and the sidecar there is no main to enter.",
			procs:  map[int]string{1: sandbox, 9: sidecar},
			self:   9, err: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			proc := t.TempDir()
			for pid, cg := range tc.procs {
				dir := filepath.Join(proc, strconv.Itoa(pid))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cg), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(proc, "sys"), 0o755); err != nil { // not a process
				t.Fatal(err)
			}
			got, err := MainProcess(proc, tc.self)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nMainProcess(...): error %v, want error %v", tc.reason, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("%s\nMainProcess(...) = %d, want %d", tc.reason, got, tc.want)
			}
		})
	}
}

func TestEnviron(t *testing.T) {
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := "PATH=/usr/bin\x00NVIDIA_VISIBLE_DEVICES=GPU-1\x00CUDA_DEVICE_MEMORY_LIMIT_0=4912m\x00"
	if err := os.WriteFile(filepath.Join(proc, "7", "environ"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Environ(proc, 7)
	want := []string{"PATH=/usr/bin", "NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_DEVICE_MEMORY_LIMIT_0=4912m"}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Environ(...): -want, +got:\n%s", diff)
	}
}

func TestSessionEnv(t *testing.T) {
	cases := map[string]struct {
		reason        string
		main, session []string
		want          []string
	}{
		"MainsWithTheTerminal": {
			reason:  "A session sees main's variables (the slice's budget among them) and its own terminal and connection, not sshd's others.",
			main:    []string{"PATH=/usr/bin", "CUDA_DEVICE_MEMORY_LIMIT_0=4912m", "HOME=/home/u", "TERM=dumb"},
			session: []string{"TERM=xterm", "SSH_CONNECTION=1 2 3 4", "SSH_ORIGINAL_COMMAND=id", "MAIL=/var/mail/root", "PATH=/sbin"},
			want:    []string{"PATH=/usr/bin", "CUDA_DEVICE_MEMORY_LIMIT_0=4912m", "HOME=/home/u", "TERM=xterm", "SSH_CONNECTION=1 2 3 4"},
		},
		"Home": {
			reason: "Main runs as root: without a HOME of its own a session's is /root.",
			main:   []string{"PATH=/usr/bin"},
			want:   []string{"PATH=/usr/bin", "HOME=/root"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SessionEnv(tc.main, tc.session)); diff != "" {
				t.Errorf("%s\nSessionEnv(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	cases := map[string]struct {
		reason, original string
		want             []string
	}{
		"Interactive": {reason: "Without a command a session is a login shell.", want: []string{"/bin/bash", "-l"}},
		"Command":     {reason: "The client's command runs through the shell.", original: "nvidia-smi -L", want: []string{"/bin/bash", "-c", "nvidia-smi -L"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Command("/bin/bash", tc.original)); diff != "" {
				t.Errorf("%s\nCommand(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestShell(t *testing.T) {
	root := t.TempDir()
	if _, err := Shell(root); err == nil {
		t.Error("Shell(an image without a shell): no error, want one that says the image has none")
	}
	for _, sh := range []string{"sh", "bash"} {
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "bin", sh), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Shell(root); err != nil || got != "/bin/bash" {
		t.Errorf("Shell(...) = %q, %v; want /bin/bash, preferred over /bin/sh", got, err)
	}
}
