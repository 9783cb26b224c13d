module github.com/go-schedule/schedule

go 1.25

require (
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
)
