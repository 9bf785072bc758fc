package smitool

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// notAvailable are the ways tools print a value they do not have.
var notAvailable = map[string]bool{"": true, "n/a": true, "[n/a]": true, "na": true, "-": true, "none": true,
	"[not supported]": true, "not supported": true}

// Value trims a tool's value and turns its spellings of "not available" into "".
func Value(s string) string {
	s = strings.TrimSpace(s)
	if notAvailable[strings.ToLower(s)] {
		return ""
	}
	return s
}

// ParseQueryCSV parses the output of an nvidia-smi-style query (--query-gpu=a,b,c --format=csv,noheader,nounits)
// into one map per line keyed by the queried fields. A line with the wrong number of columns is an error that
// names it.
func ParseQueryCSV(out []byte, fields []string) ([]map[string]string, error) {
	var rows []map[string]string
	for n, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.Split(line, ",")
		if len(cols) != len(fields) {
			return nil, errors.Errorf("line %d has %d columns, want %d (%s)", n+1, len(cols), len(fields), strings.Join(fields, ","))
		}
		row := map[string]string{}
		for i, f := range fields {
			row[f] = Value(cols[i])
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Section is one block of a "key : value" report: the line that opened it, and its values keyed by their path
// of headings ("FB Memory Usage/Total").
type Section struct {
	Header string
	Values map[string]string
}

// ParseSections parses an indented "key : value" report such as nvidia-smi -q and its look-alikes. A line for
// which isHeader answers true opens a new section; values before the first one are global. A line without a
// colon inside a section names a sub-heading for the more indented lines that follow.
func ParseSections(out []byte, isHeader func(line string) bool) (global map[string]string, sections []Section) {
	global = map[string]string{}
	current := global
	type heading struct {
		indent int
		name   string
	}
	var stack []heading
	for _, raw := range strings.Split(string(out), "\n") {
		line := strings.TrimRight(strings.ReplaceAll(raw, "\t", "    "), " \r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.Trim(trimmed, "=-+|") == "" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if isHeader(trimmed) {
			sections = append(sections, Section{Header: trimmed, Values: map[string]string{}})
			current, stack = sections[len(sections)-1].Values, []heading{{indent: indent}}
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].name != "" && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		key, value, ok := strings.Cut(trimmed, ":")
		key = strings.TrimSpace(key)
		if !ok {
			stack = append(stack, heading{indent: indent, name: trimmed})
			continue
		}
		var path []string
		for _, h := range stack {
			if h.name != "" {
				path = append(path, h.name)
			}
		}
		current[strings.Join(append(path, key), "/")] = Value(value)
	}
	return global, sections
}

// Lookup returns the value of the first key that matches one of names case-insensitively.
func Lookup(values map[string]string, names ...string) string {
	for _, n := range names {
		if v, ok := values[n]; ok {
			return v
		}
	}
	for _, n := range names {
		for k, v := range values {
			if strings.EqualFold(k, n) {
				return v
			}
		}
	}
	return ""
}

// units are the memory units tools print, in bytes.
var units = map[string]float64{
	"b": 1, "kb": 1 << 10, "kib": 1 << 10, "k": 1 << 10, "mb": 1 << 20, "mib": 1 << 20, "m": 1 << 20,
	"gb": 1 << 30, "gib": 1 << 30, "g": 1 << 30, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseMemoryMiB reads a memory size such as "49152MiB", "24576 MiB", "67108864 KB" or "206141652992" into MiB;
// a bare number is in defaultUnit (B, KB, MB, GB). Tools mean binary units even where they write KB or MB.
func ParseMemoryMiB(s, defaultUnit string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, defaultUnit
	if i >= 0 {
		num, unit = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	}
	factor, ok := units[strings.ToLower(unit)]
	if !ok {
		return 0, errors.Errorf("memory %q: unknown unit %q", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.Errorf("memory %q is not a size", s)
	}
	mib := v * factor / (1 << 20)
	if mib > math.MaxInt32*1024.0 {
		return 0, errors.Errorf("memory %q is implausibly large", s)
	}
	return int64(math.Round(mib)), nil
}

// ROCmSMICommand is the run of rocm-smi, or of a fork of it such as Hygon's hy-smi, that ParseROCmSMI reads.
func ROCmSMICommand(tool string) Command {
	return Command{Name: tool, Args: []string{"--showproductname", "--showmeminfo", "vram", "--showbus",
		"--showuniqueid", "--showdriverversion", "--json"}}
}

// QueryROCmSMI queries a tool that reports like rocm-smi (AMD's rocm-smi, Hygon's hy-smi).
func QueryROCmSMI(tool string) Query {
	cmd := ROCmSMICommand(tool)
	return func(ctx context.Context, run Runner) ([]Card, error) {
		out, err := run.Run(ctx, cmd)
		if err != nil {
			return nil, err
		}
		return ParseROCmSMI(out)
	}
}

// ParseROCmSMI parses rocm-smi's JSON report (and that of hy-smi, Hygon's fork of it) run with --showproductname
// --showmeminfo vram --showbus --showuniqueid --showdriverversion --json: one object per "cardN" plus "system".
// Key spellings differ between releases, so keys are matched case-insensitively.
func ParseROCmSMI(out []byte) ([]Card, error) {
	var report map[string]map[string]any
	if err := json.Unmarshal(out, &report); err != nil {
		return nil, errors.Wrap(err, "cannot parse the JSON report")
	}
	system := stringValues(report["system"])
	var cards []Card
	for name, raw := range report {
		idx, ok := strings.CutPrefix(strings.ToLower(name), "card")
		if !ok {
			continue
		}
		index, err := strconv.ParseInt(idx, 10, 32)
		if err != nil || index < 0 {
			return nil, errors.Errorf("%q is not a card name", name)
		}
		v := stringValues(raw)
		c := Card{BusID: Lookup(v, "PCI Bus")}
		c.Index = int32(index)
		c.Product = Lookup(v, "Card Series", "Card series", "Device Name", "Card Model", "Card model")
		c.UUID = Lookup(v, "Unique ID", "UUID")
		c.Family = Lookup(v, "GFX Version", "gfx_version")
		c.DriverVersion = Lookup(system, "Driver version", "Driver Version")
		if total := Lookup(v, "VRAM Total Memory (B)"); total != "" {
			if c.MemoryMiB, err = ParseMemoryMiB(total, "B"); err != nil {
				return nil, errors.Wrapf(err, "%s", name)
			}
		}
		if c.Product == "" || c.MemoryMiB == 0 {
			c.Unhealthy = true
		}
		cards = append(cards, c)
	}
	sort.Slice(cards, func(i, j int) bool { return cards[i].Index < cards[j].Index })
	return cards, nil
}

// stringValues keeps the string and number values of a JSON object, as strings.
func stringValues(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = Value(v)
		case float64:
			out[k] = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return out
}

// queryFields are the fields an nvidia-smi-style tool is asked for, in order.
var queryFields = []string{"index", "uuid", "name", "memory.total", "driver_version", "pci.bus_id"}

// QueryLikeNvidiaSMI queries a tool that copies nvidia-smi's --query-gpu interface (Iluvatar's ixsmi, T-Head's
// ppu-smi) for each card's index, UUID, name, memory in MiB, driver version and PCI address.
func QueryLikeNvidiaSMI(tool string) Query {
	cmd := Command{Name: tool, Args: []string{"--query-gpu=" + strings.Join(queryFields, ","), "--format=csv,noheader,nounits"}}
	return func(ctx context.Context, run Runner) ([]Card, error) {
		out, err := run.Run(ctx, cmd)
		if err != nil {
			return nil, err
		}
		return ParseNvidiaSMIQuery(out)
	}
}

// ParseNvidiaSMIQuery reads the output of QueryLikeNvidiaSMI's command.
func ParseNvidiaSMIQuery(out []byte) ([]Card, error) {
	rows, err := ParseQueryCSV(out, queryFields)
	if err != nil {
		return nil, err
	}
	cards := make([]Card, 0, len(rows))
	for i, r := range rows {
		c := Card{BusID: r["pci.bus_id"]}
		c.Index, c.UUID, c.Product, c.DriverVersion = int32(i), r["uuid"], r["name"], r["driver_version"]
		if n, err := strconv.ParseInt(r["index"], 10, 32); err == nil && n >= 0 {
			c.Index = int32(n)
		}
		if r["memory.total"] != "" {
			if c.MemoryMiB, err = ParseMemoryMiB(r["memory.total"], "MB"); err != nil {
				return nil, errors.Wrapf(err, "card %d", c.Index)
			}
		}
		c.Unhealthy = c.Product == "" || c.MemoryMiB == 0
		cards = append(cards, c)
	}
	return cards, nil
}
