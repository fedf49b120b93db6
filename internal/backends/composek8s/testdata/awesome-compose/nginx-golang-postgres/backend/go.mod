module github.com/docker/awesome-compose/nginx-golang-postgres/backend

go 1.18

require (
	github.com/gorilla/handlers v1.3.0
	github.com/gorilla/mux v1.6.2
	github.com/lib/pq v1.10.3
)

require github.com/gorilla/context v1.1.1 // indirect
