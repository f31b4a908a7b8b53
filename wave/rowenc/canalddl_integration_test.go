package rowenc

// CanalDDLType against Canal itself: every statement of canalDDLStatements goes to
// deploy/testenv/canal-ddl's CanalDDLType, which runs Canal 1.1.7's DruidDdlParser as
// LogEventConvert does (canal.instance.filter.druid.ddl=true, the default) and prints the
// EventType Canal's entry gets; CanalDDLType must give the same name for each.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

// canalDDLStatements are DDL statements as a binlog QUERY event carries them (MySQL's and
// MariaDB's syntax, comments and backquotes kept, names schema-qualified or not), with
// what online schema change tools (gh-ost, pt-online-schema-change) run, and the other
// statements a QUERY event may hold.
var canalDDLStatements = []string{
	// ALTER TABLE: columns
	"ALTER TABLE `shop`.`orders` ADD COLUMN `note` VARCHAR(255) NULL DEFAULT NULL AFTER `status`",
	`ALTER TABLE t ADD c INT`,
	`ALTER TABLE t ADD COLUMN (c INT, d INT)`,
	"ALTER TABLE t ADD COLUMN `index` INT",
	"ALTER TABLE `t` ADD `key` INT",
	`ALTER TABLE t ADD c INT COMMENT 'a, ENGINE=x'`,
	`ALTER TABLE t DROP COLUMN c`,
	`ALTER TABLE t DROP c`,
	`ALTER TABLE t CHANGE a b BIGINT`,
	`ALTER TABLE t CHANGE COLUMN a b BIGINT NOT NULL`,
	`ALTER TABLE t MODIFY a BIGINT NOT NULL`,
	`ALTER TABLE t MODIFY COLUMN a BIGINT`,
	`ALTER TABLE t ALTER COLUMN a SET DEFAULT 1`,
	`ALTER TABLE t RENAME COLUMN a TO b`,
	`/* ApplicationName=DBeaver */ ALTER TABLE t ADD c INT`,
	`ALTER ONLINE TABLE t ADD c INT`,
	// ALTER TABLE: indexes and constraints
	`ALTER TABLE t ADD INDEX idx_a (a)`,
	`ALTER TABLE t ADD INDEX (a)`,
	"ALTER TABLE t ADD INDEX `if` (a)",
	`ALTER TABLE t ADD KEY k (a, b)`,
	"ALTER TABLE t ADD KEY `k` (`a`) USING BTREE",
	`ALTER TABLE t ADD INDEX i (a) COMMENT 'x'`,
	`ALTER TABLE t ADD INDEX i (a) INVISIBLE`,
	`ALTER TABLE t ADD UNIQUE KEY uk (a)`,
	`ALTER TABLE t ADD UNIQUE INDEX uk (a)`,
	`ALTER TABLE t ADD UNIQUE (a)`,
	`ALTER IGNORE TABLE t ADD UNIQUE (a)`,
	`ALTER TABLE t ADD CONSTRAINT uk UNIQUE (a)`,
	"ALTER TABLE t ADD CONSTRAINT `uk` UNIQUE KEY (a)",
	`ALTER TABLE t ADD CONSTRAINT UNIQUE (a)`,
	`ALTER TABLE t ADD PRIMARY KEY (id)`,
	`ALTER TABLE t ADD CONSTRAINT PRIMARY KEY (id)`,
	`ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY (id)`,
	`ALTER TABLE t ADD CONSTRAINT fk_p FOREIGN KEY (p) REFERENCES p (id) ON DELETE CASCADE`,
	`ALTER TABLE t ADD FOREIGN KEY (p) REFERENCES p (id)`,
	`ALTER TABLE t ADD CONSTRAINT chk CHECK (a > 0)`,
	`ALTER TABLE t ADD CHECK (a > 0)`,
	`ALTER TABLE t ADD FULLTEXT INDEX ft (body)`,
	`ALTER TABLE t ADD FULLTEXT KEY ft (a) WITH PARSER ngram`,
	`ALTER TABLE t ADD FULLTEXT ft (body)`,
	`ALTER TABLE t ADD SPATIAL INDEX sp (g)`,
	`ALTER TABLE t DROP INDEX idx_a`,
	`ALTER TABLE t DROP KEY idx_a`,
	`ALTER TABLE t DROP PRIMARY KEY`,
	`ALTER TABLE t DROP FOREIGN KEY fk_p`,
	`ALTER TABLE t DROP CONSTRAINT fk_p`,
	`ALTER TABLE t DROP CHECK chk`,
	`ALTER TABLE t RENAME INDEX a TO b`,
	`ALTER TABLE t RENAME KEY a TO b`,
	`ALTER TABLE t ALTER INDEX i INVISIBLE`,
	"ALTER TABLE t\n  ADD INDEX i (a)",
	// ALTER TABLE: renames
	`ALTER TABLE t RENAME TO u`,
	"ALTER TABLE `db`.`t` RENAME `db`.`u`",
	`ALTER TABLE t RENAME AS u`,
	// ALTER TABLE: several items (the first with a type decides, a table option makes it ALTER)
	`ALTER TABLE t ADD COLUMN c INT, ADD INDEX i (c)`,
	`ALTER TABLE t ADD INDEX i (c), ADD COLUMN d INT`,
	`ALTER TABLE t DROP INDEX i, ADD INDEX i (a, b)`,
	`ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a)`,
	`ALTER TABLE t ADD PRIMARY KEY (a), DROP PRIMARY KEY`,
	"ALTER TABLE t DROP FOREIGN KEY `fk`, DROP KEY `fk`",
	`ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id), ADD INDEX i (a)`,
	`ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id), ADD COLUMN c INT`,
	"ALTER TABLE t ADD CONSTRAINT `fk` FOREIGN KEY (`p`) REFERENCES `p` (`id`), DROP INDEX x",
	`ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p (id), RENAME TO u`,
	"ALTER TABLE t ADD CONSTRAINT `chk` CHECK (`a` > 0), ADD INDEX i (a)",
	`ALTER TABLE t ADD c INT COMMENT 'a', ADD INDEX i (a)`,
	`ALTER TABLE t ADD COLUMN c ENUM('a,b','c'), ADD INDEX i (c)`,
	`ALTER TABLE t RENAME TO u, ADD INDEX i (a)`,
	`ALTER TABLE t ADD INDEX i (a), RENAME TO u`,
	`ALTER TABLE t ADD INDEX i (a), ALGORITHM=INPLACE, LOCK=NONE`,
	`ALTER TABLE t ALGORITHM=INPLACE, ADD INDEX i (a)`,
	`ALTER TABLE t ADD COLUMN c INT, ALGORITHM=INSTANT`,
	`ALTER TABLE t ADD INDEX i (a), CONVERT TO CHARACTER SET utf8mb4`,
	`ALTER TABLE t ADD INDEX i (a), ENGINE=InnoDB`,
	`ALTER TABLE t ENGINE = InnoDB, ADD INDEX i (a)`,
	`ALTER TABLE t ADD INDEX i (a), COMMENT 'x'`,
	`ALTER TABLE t ADD INDEX i (a), AUTO_INCREMENT=5`,
	`ALTER TABLE t ADD INDEX i (a), ROW_FORMAT=DYNAMIC`,
	`ALTER TABLE t ADD INDEX i (a), CHARACTER SET utf8mb4`,
	`ALTER TABLE t ADD INDEX i (a), CHARSET utf8mb4`,
	`ALTER TABLE t DROP INDEX i, DEFAULT CHARSET=utf8mb4`,
	// ALTER TABLE: table options and the rest
	`ALTER TABLE t ENGINE=InnoDB`,
	`ALTER TABLE t ENGINE=InnoDB ROW_FORMAT=DYNAMIC`,
	`ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
	`ALTER TABLE t DEFAULT CHARACTER SET utf8mb4`,
	`ALTER TABLE t CHARACTER SET = utf8mb4`,
	`ALTER TABLE t DEFAULT COLLATE=utf8mb4_bin`,
	`ALTER TABLE t DEFAULT CHARSET=utf8mb4`,
	`ALTER TABLE t CHARSET=utf8mb4`,
	`ALTER TABLE t AUTO_INCREMENT = 100`,
	`ALTER TABLE t COMMENT 'ADD INDEX'`,
	`ALTER TABLE t COMMENT = 'x'`,
	`ALTER TABLE t ROW_FORMAT=COMPRESSED`,
	`ALTER TABLE t ADD PARTITION (PARTITION p3 VALUES LESS THAN (2025))`,
	`ALTER TABLE t DROP PARTITION p1`,
	`ALTER TABLE t TRUNCATE PARTITION p1`,
	`ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4`,
	`ALTER TABLE t REMOVE PARTITIONING`,
	`ALTER TABLE t FORCE`,
	`ALTER TABLE t DISABLE KEYS`,
	`ALTER TABLE t ORDER BY a`,
	`ALTER TABLE t DISCARD TABLESPACE`,
	// MariaDB's IF [NOT] EXISTS
	`ALTER TABLE IF EXISTS t ADD c INT`,
	`ALTER TABLE t ADD COLUMN IF NOT EXISTS c INT`,
	`ALTER TABLE t ADD INDEX IF NOT EXISTS i (a)`,
	`ALTER TABLE t ADD c INT, ADD INDEX IF NOT EXISTS i (a)`,
	`ALTER TABLE t DROP INDEX IF EXISTS i`,
	`ALTER TABLE t DROP COLUMN IF EXISTS c`,
	`ALTER TABLE t DROP FOREIGN KEY IF EXISTS fk`,
	`ALTER TABLE t CHANGE COLUMN IF EXISTS c d INT`,
	`CREATE INDEX IF NOT EXISTS i ON t (a)`,
	`CREATE UNIQUE INDEX IF NOT EXISTS i ON t (a)`,
	`DROP INDEX IF EXISTS i ON t`,
	`RENAME TABLE IF EXISTS t TO u`,
	// CREATE TABLE and CREATE INDEX
	"CREATE TABLE `db`.`t` (`id` int NOT NULL AUTO_INCREMENT, PRIMARY KEY (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
	"CREATE TABLE t (\n  id INT,\n  PRIMARY KEY (id)\n)",
	`CREATE TABLE IF NOT EXISTS t (a int)`,
	`CREATE TEMPORARY TABLE tmp (a int)`,
	`CREATE TEMPORARY TABLE IF NOT EXISTS t (a int)`,
	`CREATE TABLE t2 LIKE t`,
	"CREATE TABLE `db`.`t2` LIKE `db`.`t`",
	`CREATE TABLE IF NOT EXISTS t LIKE u`,
	`CREATE TABLE t2 AS SELECT * FROM t`,
	`CREATE TABLE t2 SELECT * FROM t`,
	"CREATE TABLE `t2` (`a` int DEFAULT NULL) SELECT a FROM t",
	`CREATE OR REPLACE TABLE t (a int)`,
	`CREATE INDEX i ON t (a)`,
	"CREATE UNIQUE INDEX i ON `db`.`t` (a)",
	`CREATE FULLTEXT INDEX ft ON t (body)`,
	`CREATE SPATIAL INDEX sp ON t (g)`,
	`CREATE INDEX i USING BTREE ON t (a)`,
	`CREATE INDEX i ON t (a) ALGORITHM=INPLACE LOCK=NONE`,
	`CREATE OR REPLACE INDEX i ON t (a)`,
	"# comment\nCREATE TABLE t (a int)",
	// DROP, TRUNCATE, RENAME
	"DROP TABLE `t` /* generated by server */",
	"DROP TABLE IF EXISTS `a`, `b` /* generated by server */",
	"DROP TEMPORARY TABLE IF EXISTS `tmp` /* generated by server */",
	`DROP TABLE /* comment */ t`,
	`DROP TABLE t CASCADE`,
	"-- comment\nDROP TABLE t",
	`DROP INDEX i ON t`,
	"DROP INDEX `PRIMARY` ON `db`.`t`",
	`DROP INDEX i ON t ALGORITHM=INPLACE LOCK=NONE`,
	`TRUNCATE TABLE t`,
	`TRUNCATE t`,
	"truncate `db`.`t`",
	`RENAME TABLE a TO b`,
	`RENAME TABLE a TO b, c TO d`,
	`RENAME USER a TO b`,
	// gh-ost
	"create /* gh-ost */ table `shop`.`_orders_gho` like `shop`.`orders`",
	"alter /* gh-ost */ table `shop`.`_orders_gho` add column note varchar(255)",
	"alter /* gh-ost */ table `shop`.`_orders_gho` add key idx (a)",
	"create /* gh-ost */ table `shop`.`_orders_ghc` (id bigint auto_increment, last_update timestamp not null DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, hint varchar(64) charset ascii not null, value varchar(4096) charset ascii not null, primary key(id), unique key hint_uidx(hint)) auto_increment=256",
	"create /* gh-ost */ table `shop`.`_orders_del` (id int auto_increment primary key) engine=InnoDB comment='ghost-cut-over-sentry'",
	"rename /* gh-ost */ table `shop`.`orders` to `shop`.`_orders_del`, `shop`.`_orders_gho` to `shop`.`orders`",
	"drop /* gh-ost */ table if exists `shop`.`_orders_ghc`",
	// pt-online-schema-change
	"CREATE TABLE `shop`.`_orders_new` (`id` int NOT NULL, PRIMARY KEY (`id`)) ENGINE=InnoDB",
	"ALTER TABLE `shop`.`_orders_new` ADD COLUMN note varchar(255)",
	"CREATE DEFINER=`root`@`localhost` TRIGGER `pt_osc_shop_orders_del` AFTER DELETE ON `shop`.`orders` FOR EACH ROW BEGIN DECLARE CONTINUE HANDLER FOR 1146 begin end; DELETE IGNORE FROM `shop`.`_orders_new` WHERE `shop`.`_orders_new`.`id` <=> OLD.`id`; END",
	"CREATE DEFINER=`root`@`localhost` TRIGGER `pt_osc_shop_orders_ins` AFTER INSERT ON `shop`.`orders` FOR EACH ROW REPLACE INTO `shop`.`_orders_new` (`id`) VALUES (NEW.`id`)",
	"RENAME TABLE `shop`.`orders` TO `shop`.`_orders_old`, `shop`.`_orders_new` TO `shop`.`orders`",
	"DROP TABLE IF EXISTS `shop`.`_orders_old` /* generated by server */",
	"DROP TRIGGER IF EXISTS `shop`.`pt_osc_shop_orders_del`",
	// databases, views, routines, users and the rest
	"CREATE DATABASE `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */",
	`CREATE DATABASE IF NOT EXISTS shop`,
	`CREATE SCHEMA shop`,
	`DROP DATABASE shop`,
	"DROP DATABASE IF EXISTS `shop`",
	`DROP SCHEMA shop`,
	`ALTER DATABASE shop CHARACTER SET utf8mb4`,
	`ALTER SCHEMA shop DEFAULT CHARACTER SET utf8mb4`,
	"CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`%` SQL SECURITY DEFINER VIEW `v` AS select `t`.`a` AS `a` from `t`",
	`CREATE OR REPLACE VIEW v AS SELECT a FROM t`,
	`CREATE VIEW v AS SELECT a FROM t`,
	`DROP VIEW IF EXISTS v`,
	`DROP VIEW v1, v2`,
	`ALTER VIEW v AS SELECT 1`,
	"CREATE DEFINER=`root`@`localhost` PROCEDURE `p`() BEGIN SELECT 1; END",
	`DROP PROCEDURE IF EXISTS p`,
	"CREATE DEFINER=`root`@`localhost` FUNCTION `f`(x INT) RETURNS int(11) DETERMINISTIC RETURN x + 1",
	`DROP FUNCTION f`,
	"CREATE DEFINER=`root`@`localhost` EVENT `e` ON SCHEDULE EVERY 1 DAY DO DELETE FROM t WHERE a < 0",
	`DROP EVENT IF EXISTS e`,
	`CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1`,
	`DROP TRIGGER tr`,
	`CREATE USER 'u'@'%' IDENTIFIED WITH 'mysql_native_password' AS '*94BDCEBE19083CE2A1F959FD02F964C7AF4CFC29'`,
	`DROP USER 'u'@'%'`,
	`GRANT SELECT ON db.* TO 'u'@'%'`,
	`REVOKE SELECT ON db.* FROM 'u'@'%'`,
	`OPTIMIZE TABLE t`,
	`ANALYZE TABLE t`,
	`REPAIR TABLE t`,
	`CREATE SEQUENCE s`,
	`DROP SEQUENCE s`,
	`CREATE TABLESPACE ts ADD DATAFILE 'ts.ibd' ENGINE=InnoDB`,
	`FLUSH PRIVILEGES`,
	// malformed
	`/* unterminated`,
	`ALTER TABLE t ADD c INT COMMENT 'unterminated`,
	`DROP TABLE t /* unterminated`,
	"ALTER TABLE `t ADD INDEX i (a)",
	``,
	`TRUNCATE`,
	`ALTER TABLE t ADD CONSTRAINT`,
}

func TestCanalDDLTypeMatchesCanalIntegration(t *testing.T) {
	testenv.RequireJava(t)
	cp := testenv.JavaConsumer(t, "deploy/testenv/canal-ddl")
	var in bytes.Buffer
	for _, sql := range canalDDLStatements {
		b, err := json.Marshal(sql)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	var stderr bytes.Buffer
	cmd := exec.Command("java", "-cp", cp, "io.binlake.canalddl.CanalDDLType", "db")
	cmd.Stdin, cmd.Stderr = &in, &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Canal's DDL parser: %v\n%s", err, stderr.String())
	}
	var canal []string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		canal = append(canal, sc.Text())
	}
	if len(canal) != len(canalDDLStatements) {
		t.Fatalf("Canal's DDL parser gave %d answers to %d statements:\n%s\n%s", len(canal), len(canalDDLStatements), out, stderr.String())
	}
	var bad []string
	counts := map[string]int{}
	for i, sql := range canalDDLStatements {
		counts[canal[i]]++
		if got := CanalDDLType(sql); got != canal[i] {
			bad = append(bad, fmt.Sprintf("%q: CanalDDLType %s, Canal %s", sql, got, canal[i]))
		}
	}
	t.Logf("Canal 1.1.7's types of the %d statements: %v", len(canalDDLStatements), counts)
	if len(bad) > 0 {
		t.Errorf("%d of %d statements typed unlike Canal 1.1.7:\n%s", len(bad), len(canalDDLStatements), strings.Join(bad, "\n"))
	}
}
