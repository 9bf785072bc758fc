package smitool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/google/go-cmp/cmp"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/providers/pcisysfs/pcisysfstest"
	"github.com/gpustack/gpustack-operator/vendors"
)

func card(index int32, bus, product string) Card {
	return Card{BusID: bus, Device: providers.Device{Index: index, UUID: "U" + product + bus, Product: product, MemoryMiB: 1024}}
}

func TestDetect(t *testing.T) {
	amd, _ := vendors.Lookup("amd")
	gpu := pcisysfstest.Function("0x1002", "0x74a1", "0x038000")
	type want struct {
		devices []providers.Device
		err     string
	}
	cases := map[string]struct {
		reason string
		bus    map[string]map[string]string
		cards  []Card
		err    error
		want   want
	}{
		"NoCardsNoTool": {
			reason: "A node without the vendor's cards has nothing to report, even though the tool is missing.",
			bus:    map[string]map[string]string{"0000:00:1f.6": pcisysfstest.Function("0x8086", "0x15bc", "0x020000")},
			err:    errors.New("rocm-smi: the tool is not installed"),
		},
		"MatchedByAddress": {
			reason: "The tool's cards are matched to the bus by address, whatever order it prints them in.",
			bus:    map[string]map[string]string{"0000:0c:00.0": gpu, "0000:1c:00.0": gpu},
			cards:  []Card{card(1, "0000:1C:00.0", "B"), card(0, "00000000:0c:00.0", "A")},
			want: want{devices: []providers.Device{
				{Manufacturer: "amd", Index: 0, UUID: "UA00000000:0c:00.0", Product: "A", MemoryMiB: 1024},
				{Manufacturer: "amd", Index: 1, UUID: "UB0000:1C:00.0", Product: "B", MemoryMiB: 1024},
			}},
		},
		"ToolMissesACard": {
			reason: "A card on the bus the tool does not describe is reported unhealthy with the next free index, and the error names it.",
			bus:    map[string]map[string]string{"0000:0c:00.0": gpu, "0000:1c:00.0": gpu},
			cards:  []Card{card(0, "0000:0c:00.0", "A")},
			want: want{devices: []providers.Device{
				{Manufacturer: "amd", Index: 0, UUID: "UA0000:0c:00.0", Product: "A", MemoryMiB: 1024},
				{Manufacturer: "amd", Index: 1, UUID: "amd-pci-0000:1c:00.0", Product: "AMD 74a1", Unhealthy: true},
			}, err: "0000:1c:00.0"},
		},
		"ToolBroken": {
			reason: "When the tool fails, every card on the bus is still reported, unhealthy, with the tool's error.",
			bus:    map[string]map[string]string{"0000:0c:00.0": gpu},
			err:    errors.New("rocm-smi: no answer within 20s"),
			want: want{devices: []providers.Device{
				{Manufacturer: "amd", Index: 0, UUID: "amd-pci-0000:0c:00.0", Product: "AMD 74a1", Unhealthy: true},
			}, err: "no answer within 20s"},
		},
		"MatchedByOrder": {
			reason: "Cards without an address are matched to the bus in order.",
			bus:    map[string]map[string]string{"0000:0c:00.0": gpu},
			cards:  []Card{card(0, "", "A")},
			want: want{devices: []providers.Device{
				{Manufacturer: "amd", Index: 0, UUID: "UA", Product: "A", MemoryMiB: 1024},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := &Backend{Vendor: amd, SysfsRoot: pcisysfstest.Tree(t, tc.bus),
				Query: func(context.Context, Runner) ([]Card, error) { return tc.cards, tc.err }}
			got, err := b.Detect(context.Background())
			if diff := cmp.Diff(tc.want.devices, got); diff != "" {
				t.Errorf("%s\nDetect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.err == "" && err != nil || tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)) {
				t.Errorf("%s\nDetect(...): error %v, want one containing %q", tc.reason, err, tc.want.err)
			}
		})
	}
}

func TestDetectWithoutSysfs(t *testing.T) {
	amd, _ := vendors.Lookup("amd")
	b := &Backend{Vendor: amd, SysfsRoot: filepath.Join(t.TempDir(), "none"),
		Query: func(context.Context, Runner) ([]Card, error) { return []Card{card(0, "0000:0c:00.0", "A")}, nil }}
	got, err := b.Detect(context.Background())
	if err != nil || len(got) != 1 || got[0].Product != "A" {
		t.Errorf("Without sysfs the tool's cards are reported: got %+v, %v", got, err)
	}
}

func TestNormalizeBusID(t *testing.T) {
	cases := map[string]string{
		"00000000:65:00.0": "0000:65:00.0", "0000:C1:00.0": "0000:c1:00.0", "65:00.0": "0000:65:00.0",
		"0001:0a:1f.7": "0001:0a:1f.7", "": "", "garbage": "", "0000:65:20.0": "", "0000:65:00.8": "", "1:2:3:4": "",
	}
	for in, want := range cases {
		if got := NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseMemoryMiB(t *testing.T) {
	cases := map[string]struct {
		in, unit string
		want     int64
		err      bool
	}{
		"MiBSuffix":  {in: "49152MiB", want: 49152},
		"Spaced":     {in: "24576 MiB", want: 24576},
		"KB":         {in: "67108864 KB", want: 65536},
		"BareBytes":  {in: "206141652992", unit: "B", want: 196592},
		"BareMB":     {in: "65536", unit: "MB", want: 65536},
		"GB":         {in: "80 GB", want: 81920},
		"BadUnit":    {in: "12 parsecs", err: true},
		"NotANumber": {in: "lots", unit: "MB", err: true},
		"Huge":       {in: "1e300", unit: "GB", err: true},
	}
	for name, tc := range cases {
		got, err := ParseMemoryMiB(tc.in, tc.unit)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: ParseMemoryMiB(%q, %q) = %d, %v; want %d, error %t", name, tc.in, tc.unit, got, err, tc.want, tc.err)
		}
	}
}

func TestParseQueryCSV(t *testing.T) {
	got, err := ParseQueryCSV([]byte("0, GPU-1, Iluvatar BI-V150, 32768\n\n1, GPU-2, [N/A], 32768\n"), []string{"index", "uuid", "name", "memory.total"})
	want := []map[string]string{
		{"index": "0", "uuid": "GPU-1", "name": "Iluvatar BI-V150", "memory.total": "32768"},
		{"index": "1", "uuid": "GPU-2", "name": "", "memory.total": "32768"},
	}
	if diff := cmp.Diff(want, got); diff != "" || err != nil {
		t.Errorf("ParseQueryCSV(...): %v, -want, +got:\n%s", err, diff)
	}
	if _, err := ParseQueryCSV([]byte("0, GPU-1\n"), []string{"index", "uuid", "name"}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("ParseQueryCSV(short line): error %v, want one naming line 1", err)
	}
}

func TestParseSections(t *testing.T) {
	out := `
Driver Version : 2.7.0
Attached GPUs  : 2
GPU 00000000:0F:00.0
    Product Name : MTT S4000
    FB Memory Usage
        Total    : 49152MiB
        Used     : 0MiB
    GPU UUID     : 1f0e-01
GPU 00000000:10:00.0
    Product Name : N/A
`
	global, sections := ParseSections([]byte(out), func(l string) bool { return strings.HasPrefix(l, "GPU 0") })
	want := []Section{
		{Header: "GPU 00000000:0F:00.0", Values: map[string]string{"Product Name": "MTT S4000",
			"FB Memory Usage/Total": "49152MiB", "FB Memory Usage/Used": "0MiB", "GPU UUID": "1f0e-01"}},
		{Header: "GPU 00000000:10:00.0", Values: map[string]string{"Product Name": ""}},
	}
	if diff := cmp.Diff(want, sections); diff != "" {
		t.Errorf("ParseSections(...): -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"Driver Version": "2.7.0", "Attached GPUs": "2"}, global); diff != "" {
		t.Errorf("ParseSections(...) globals: -want, +got:\n%s", diff)
	}
}

func TestExecRunner(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Only the hung tool meets the timeout: on a loaded machine a short one could cut off the others first.
	cases := map[string]struct {
		reason  string
		cmd     Command
		timeout time.Duration
		want    string
		err     string
	}{
		"Prints": {reason: "Stdout comes back.", cmd: Command{Name: script("ok", "echo card0")}, want: "card0\n"},
		"Hangs": {reason: "A hung tool, and the child it started, are killed at the timeout.",
			cmd: Command{Name: script("hang", "sleep 30 & sleep 30")}, timeout: 500 * time.Millisecond, err: "no answer within"},
		"Fails": {reason: "A failing tool's first stderr line is in the error.",
			cmd: Command{Name: script("fail", "echo 'driver not loaded' >&2; exit 3")}, err: "driver not loaded"},
		"Missing": {reason: "A missing tool says so.", cmd: Command{Name: "no-such-smi-tool"}, err: "not installed"},
		"Floods": {reason: "A tool that never stops printing is cut off.",
			cmd: Command{Name: script("flood", "head -c 9000000 /dev/zero")}, err: "printed more than"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			got, err := ExecRunner{Timeout: timeout}.Run(context.Background(), tc.cmd)
			if tc.err == "" && (err != nil || string(got) != tc.want) {
				t.Errorf("%s\nRun(...) = %q, %v; want %q", tc.reason, got, err, tc.want)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("%s\nRun(...): error %v, want one containing %q", tc.reason, err, tc.err)
			}
		})
	}
}

func FuzzParseSections(f *testing.F) {
	f.Add("GPU 0\n  a : b\n  c\n    d : e\n")
	f.Add("::\n\t\t:\nGPU\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, sections := ParseSections([]byte(s), func(l string) bool { return strings.HasPrefix(l, "GPU") })
		for _, sec := range sections {
			if sec.Values == nil {
				t.Fatal("a section without values map")
			}
		}
	})
}

func FuzzParseROCmSMI(f *testing.F) {
	f.Add(`{"card0":{"Card Series":"X","VRAM Total Memory (B)":"1073741824"},"system":{"Driver version":"6"}}`)
	f.Add(`{"card-1":{}}`)
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := ParseROCmSMI([]byte(s))
		if err != nil {
			return
		}
		for _, c := range cards {
			if c.Index < 0 || c.MemoryMiB < 0 {
				t.Fatalf("card %+v", c)
			}
		}
	})
}

func FuzzParseMemoryMiB(f *testing.F) {
	for _, s := range []string{"49152MiB", "1e300", "-1", "NaN", "0x10", ".5 GB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseMemoryMiB(s, "MB"); err == nil && v < 0 {
			t.Fatalf("ParseMemoryMiB(%q) = %d", s, v)
		}
	})
}

// FuzzParseNvidiaSMIQuery fuzzes the query CSV that Iluvatar's ixsmi and T-Head's ppu-smi print.
func FuzzParseNvidiaSMIQuery(f *testing.F) {
	f.Add("0, GPU-7a1c, Iluvatar BI-V150, 32768, 4.2.0, 00000000:3B:00.0\n")
	f.Add("0, PPU-9c2e, PPU-ZW810E, 98304, 1.5.1, 00000000:4F:00.0\n")
	f.Add("0,,,,,\n-1, x, y, 1e309, z, w\n")
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := ParseNvidiaSMIQuery([]byte(s))
		if err != nil {
			return
		}
		for _, c := range cards {
			if c.MemoryMiB < 0 || c.Index < 0 {
				t.Fatalf("card %+v", c)
			}
		}
	})
}
