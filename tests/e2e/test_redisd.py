"""tests/e2e/redisd.py, the redis-server the fleet tests start: it answers on
its port and socket with no persistence, comes back on the same port after a
kill, and leaves no process or directory behind."""
import os
import socket
import unittest

from redisd import RedisError, RedisServer


class RedisServerHelperTests(unittest.TestCase):
    def test_starts_answers_restarts_on_the_same_port_and_cleans_up(self):
        srv = RedisServer()
        self.addCleanup(srv.stop)
        srv.start()
        self.assertEqual(srv.command("PING"), "PONG")
        self.assertEqual(srv.command("CONFIG", "GET", "save"), ["save", ""])
        self.assertEqual(srv.command("CONFIG", "GET", "appendonly"), ["appendonly", "no"])
        self.assertEqual(srv.command("SET", "k", "v"), "OK")
        self.assertIsNone(srv.command("GET", "nokey"))
        self.assertIsInstance(srv.command("NOSUCHCOMMAND"), RedisError)
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(srv.sock)
        port, pid = srv.port, srv.pid
        srv.kill()
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)
        with self.assertRaises(OSError):
            srv.command("PING", timeout=1.0)
        srv.restart()
        self.assertEqual(srv.port, port)
        self.assertNotEqual(srv.pid, pid)
        self.assertIsNone(srv.command("GET", "k"))   # nothing persisted
        d, pid = srv.dir, srv.pid
        srv.stop()
        self.assertFalse(os.path.exists(d))
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_requirepass_and_the_password_for_its_own_client(self):
        with RedisServer(extra=["--requirepass", "pw-123456"], password="pw-123456") as srv:
            self.assertEqual(srv.command("PING"), "PONG")
            srv.password = None
            self.assertIn("NOAUTH", str(srv.command("PING")))


if __name__ == "__main__":
    unittest.main()
