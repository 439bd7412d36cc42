module example.com/heapdemo

go 1.19
