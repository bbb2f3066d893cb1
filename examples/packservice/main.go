// Command packservice is an example pack service: module "demo" (package
// demo) served by packserver.Main with the tools and check of index.json.
//
//	go build -o packservice ./examples/packservice
//	KINDGI_PACK_SERVICE_TOKEN=secret PORT=8080 ./packservice --index examples/packservice/index.json
package main

import (
	"github.com/kindgi/agents/examples/packservice/demo"
	"github.com/kindgi/agents/pack/packserver"
)

func main() {
	packserver.Main(demo.Module())
}
