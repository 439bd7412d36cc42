// heapdemo: a small server-like program whose heap the recording script profiles in every
// way the Go runtime and net/http/pprof write a heap profile (see ../../record_go.sh).
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	_ "net/http/pprof"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// Kept alive until the end: the in-use part of the heap.
var (
	mu       sync.Mutex
	retained [][]byte
	sessions = map[int]*session{}
)

type session struct {
	id     int
	name   string
	buffer []byte
	tags   []string
}

// newBuffer is small enough to be inlined into every caller: its frames are inlined frames.
func newBuffer(n int) []byte { return make([]byte, n) }

func keep(b []byte) {
	mu.Lock()
	retained = append(retained, b)
	mu.Unlock()
}

func decodeRequest(i int) []byte {
	raw := newBuffer(512 + i%7*64)
	if i%5 == 0 {
		keep(raw)
	}
	return raw
}

func parseHeaders(i int) map[string]string {
	headers := make(map[string]string, 8)
	for k := 0; k < 6; k++ {
		headers[fmt.Sprintf("x-header-%d", k)] = strings.Repeat("v", 16+k)
	}
	return headers
}

func handleRequest(i int) {
	body := decodeRequest(i)
	headers := parseHeaders(i)
	_ = len(body) + len(headers)
}

func openSession(id int) {
	s := &session{id: id, name: fmt.Sprintf("session-%04d", id), buffer: newBuffer(4096)}
	for t := 0; t < 3; t++ {
		s.tags = append(s.tags, fmt.Sprintf("tag-%d-%d", id, t))
	}
	mu.Lock()
	sessions[id] = s
	mu.Unlock()
}

func buildReport(rows int) string {
	var sb strings.Builder
	for r := 0; r < rows; r++ {
		fmt.Fprintf(&sb, "row %d: %s\n", r, strings.Repeat("=", r%40))
	}
	return sb.String()
}

func cacheBlocks(worker, n int) {
	for k := 0; k < n; k++ {
		keep(newBuffer(1 << (8 + (worker+k)%6)))
	}
}

// worker runs one kind of work; each kind is its own set of stacks.
func worker(kind, id, rounds int, wg *sync.WaitGroup) {
	defer wg.Done()
	for r := 0; r < rounds; r++ {
		switch kind {
		case 0:
			handleRequest(id*rounds + r)
		case 1:
			openSession(id*rounds + r)
		case 2:
			_ = buildReport(20 + r%30)
		case 3:
			cacheBlocks(id, 3)
		}
	}
}

func runWorkers(rounds int) {
	var wg sync.WaitGroup
	for id := 0; id < 8; id++ {
		wg.Add(1)
		go worker(id%4, id, rounds, &wg)
	}
	wg.Wait()
}

func write(name string, profile string, debug int) {
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if err := pprof.Lookup(profile).WriteTo(f, debug); err != nil {
		panic(err)
	}
}

func fetch(base, path, name string) {
	resp, err := http.Get(base + path)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		panic(fmt.Sprintf("%s: %s", path, resp.Status))
	}
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		panic(err)
	}
}

func main() {
	runtime.MemProfileRate = 4096 // sampled, as servers run, but finely enough for many stacks
	runWorkers(150)
	runtime.GC() // a heap profile reports the heap as of the last GC
	write("runtime_heap.pb.gz", "heap", 0)
	write("runtime_heap_debug1.txt", "heap", 1)
	write("runtime_allocs.pb.gz", "allocs", 0)

	server := httptest.NewServer(http.DefaultServeMux) // net/http/pprof's handlers
	defer server.Close()
	runWorkers(60)
	runtime.GC()
	fetch(server.URL, "/debug/pprof/heap", "http_heap.pb.gz")
	fetch(server.URL, "/debug/pprof/allocs", "http_allocs.pb.gz")

	done := make(chan struct{})
	go func() { // work goes on while the delta profile's window is open
		for {
			select {
			case <-done:
				return
			default:
				runWorkers(5)
				runtime.GC() // publishes the window's allocations to the heap profile
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	fetch(server.URL, "/debug/pprof/heap?seconds=2", "http_heap_delta.pb.gz")
	close(done)
	runtime.KeepAlive(retained)
}
