module example.com/onetype

go 1.19

require github.com/google/pprof v0.0.0

replace github.com/google/pprof => ./pprof
