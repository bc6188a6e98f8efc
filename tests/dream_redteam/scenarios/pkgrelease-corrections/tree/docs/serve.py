import http.server

PORT = 8081

http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler, port=PORT)
