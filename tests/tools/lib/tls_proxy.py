"""A TLS front for a plain-HTTP server, for tests/tools/image.sh: `llmprobe mock` has no
TLS of its own, so this terminates TLS on 127.0.0.1 (a port of its own, printed on
stdout) with the given certificate and passes the bytes both ways to the backend.

Usage: tls_proxy.py CERT KEY BACKEND_PORT
"""

import asyncio
import ssl
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def main(cert, key, backend_port):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def serve(client_reader, client_writer):
        try:
            backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", backend_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, backend_writer), pipe(backend_reader, client_writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
