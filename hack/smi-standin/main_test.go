package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/cambricon"
	"github.com/gpustack/gpustack-operator/providers/smitool"
	"github.com/gpustack/gpustack-operator/test/framework/smifixture"
)

// standIn runs the stand-in in a fresh working directory and keeps what it left there.
type standIn struct{ dir string }

// Run answers a backend's command as the installed tool would, with the working directory the command names.
func (s standIn) Run(_ context.Context, c smitool.Command) ([]byte, error) {
	if c.Dir != "" {
		wd, _ := os.Getwd()
		if err := os.Chdir(c.Dir); err != nil {
			return nil, err
		}
		defer func() { _ = os.Chdir(wd) }()
	}
	var out strings.Builder
	err := run(s.dir, append([]string{"/usr/local/sbin/" + c.Name}, c.Args...), &out)
	return []byte(out.String()), err
}

// The stand-in answers the backend's own commands from what smifixture rendered, report files included: the
// Cambricon backend reads back the card it was given.
func TestStandInAnswersTheBackend(t *testing.T) {
	card := smitool.Card{BusID: "0000:10:00.0", Device: providers.Device{Manufacturer: "cambricon", Product: "MLU370-X8",
		UUID: "GPU-1", MemoryMiB: 49152, DriverVersion: "5.10.22"}}
	answers, err := smifixture.Cambricon([]smitool.Card{card})
	if err != nil {
		t.Fatal(err)
	}
	data, err := smifixture.StandInJSON(answers)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FixtureFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := cambricon.Query(context.Background(), standIn{dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []smitool.Card{{BusID: "0000:10:00.0", Device: providers.Device{Product: "MLU370-X8", UUID: "GPU-1", MemoryMiB: 49152, DriverVersion: "5.10.22"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cambricon.Query through the stand-in: -want, +got:\n%s", diff)
	}
}

// A command line the fixture does not hold fails as a tool refusing its arguments would.
func TestStandInRefusesUnknownCommands(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FixtureFile), []byte(`{"npu-smi info -m":{"stdout":"x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(dir, []string{"npu-smi", "info", "-t", "board"}, &strings.Builder{})
	if diff := cmp.Diff("npu-smi info -t board: invalid command", errString(err)); diff != "" {
		t.Errorf("run(unknown command): -want, +got:\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
