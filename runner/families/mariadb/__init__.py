"""MariaDB's family: mariadbd (and a MySQL build started the same way), running InnoDB and
MyRocks. engines.py: the two engines; server.py: the private mariadbd."""
