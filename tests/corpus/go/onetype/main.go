// onetype: what a profile store (Pyroscope, Parca) exports for a query over a window: the
// profiles it keeps of one series (one sample type) merged into one, stamped with the window
// (time_nanos its start, duration_nanos its length). Made with pprof's own profile package
// (github.com/google/pprof/profile, as vendored in Go's own source tree), on heap profiles
// the Go runtime wrote; no store runs here. Usage: onetype TYPE SECONDS OUT IN...
package main

import (
	"os"
	"strconv"

	"github.com/google/pprof/profile"
)

func main() {
	sampleType, out, inputs := os.Args[1], os.Args[3], os.Args[4:]
	seconds, err := strconv.ParseInt(os.Args[2], 10, 64)
	check(err)
	var series []*profile.Profile
	for _, name := range inputs {
		f, err := os.Open(name)
		check(err)
		p, err := profile.Parse(f)
		check(err)
		f.Close()
		series = append(series, only(p, sampleType))
	}
	merged, err := profile.Merge(series)
	check(err)
	merged.DurationNanos = seconds * 1e9
	f, err := os.Create(out)
	check(err)
	defer f.Close()
	check(merged.Write(f))
}

// only keeps one sample type of p, as a store keeps each sample type as a series of its own.
func only(p *profile.Profile, name string) *profile.Profile {
	for i, st := range p.SampleType {
		if st.Type == name {
			p.SampleType = []*profile.ValueType{st}
			p.DefaultSampleType = ""
			for _, s := range p.Sample {
				s.Value = []int64{s.Value[i]}
			}
			return p
		}
	}
	panic("no sample type " + name)
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
