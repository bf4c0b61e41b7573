"""RelStorage on MariaDB.

RelStorage 4.3 reads the server's version to choose its SQL, and takes MariaDB 10.11's
"10.11.x-MariaDB" for MySQL 10: it then writes MySQL 8's syntax (`INSERT … AS excluded ON
DUPLICATE KEY UPDATE`, `FOR SHARE NOWAIT`, `@@transaction_isolation`), which MariaDB does not
have, and fails at the first commit. `install()` makes RelStorage read a MariaDB server as MySQL
5.7.19, whose SQL MariaDB speaks (`VALUES()` in an upsert, `@@tx_isolation`, its stored
procedures); a MySQL server's version is read as it is. Both the adapter and
bench/zodb-vs-zodbshootout.sh (for zodbshootout) install it, so both tools run the same SQL.
"""

MYSQL_LIKE = "5.7.19"


def install():
    from relstorage.adapters.mysql.schema import MySQLVersionDetector

    fetch = MySQLVersionDetector._fetch_version_from_server
    if getattr(fetch, "dyno_mariadb", False):
        return

    def as_mysql(self, cursor):
        version = fetch(self, cursor)
        return MYSQL_LIKE if "mariadb" in version.lower() else version

    as_mysql.dyno_mariadb = True
    MySQLVersionDetector._fetch_version_from_server = as_mysql
