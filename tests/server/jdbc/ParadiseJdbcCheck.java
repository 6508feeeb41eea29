import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.Properties;

/**
 * Drives the paradise proxy with pgJDBC; prints one "key=value" line per finding.
 * Usage: java -cp postgresql.jar:. ParadiseJdbcCheck PORT USER PASSWORD
 * Compiled and run by tests/server/test_jdbc.py.
 */
public final class ParadiseJdbcCheck {
    private ParadiseJdbcCheck() {
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0]
            + "/paradise?sslmode=disable&connectTimeout=5&socketTimeout=60&ApplicationName=jdbc-check";
        Properties props = new Properties();
        props.setProperty("user", args[1]);
        props.setProperty("password", args[2]);
        try (Connection conn = DriverManager.getConnection(url, props)) {
            DatabaseMetaData meta = conn.getMetaData();
            System.out.println("product=" + meta.getDatabaseProductName() + " "
                + meta.getDatabaseProductVersion());
            plainStatement(conn);
            preparedStatement(conn);
            metadata(meta);
            rejected(conn);
        }
    }

    private static void plainStatement(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement();
             ResultSet rs = st.executeQuery(
                 "SELECT sex, count(*) AS n FROM adult GROUP BY sex ORDER BY sex")) {
            while (rs.next()) {
                System.out.println("aggregate=" + rs.getString("sex") + ":" + rs.getLong("n"));
            }
            for (SQLWarning w = st.getWarnings(); w != null; w = w.getNextWarning()) {
                System.out.println("notice=" + w.getMessage().split("\n")[0]);
            }
        }
    }

    private static void preparedStatement(Connection conn) throws SQLException {
        String sql = "SELECT count(*) AS n FROM adult WHERE sex = ? AND age > ?";
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            // more runs than pgJDBC's prepareThreshold (5): it switches to a named statement
            for (int i = 0; i < 7; i++) {
                ps.setString(1, i % 2 == 0 ? "Female" : "Male");
                ps.setInt(2, 60);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    System.out.println("prepared=" + i + ":" + rs.getLong(1));
                }
            }
        }
    }

    private static void metadata(DatabaseMetaData meta) throws SQLException {
        try (ResultSet rs = meta.getTables(null, null, "%", new String[] {"TABLE"})) {
            while (rs.next()) {
                System.out.println("table=" + rs.getString("TABLE_SCHEM") + "."
                    + rs.getString("TABLE_NAME"));
            }
        }
        try (ResultSet rs = meta.getColumns(null, "public", "adult", "%")) {
            while (rs.next()) {
                System.out.println("column=" + rs.getString("COLUMN_NAME") + ":"
                    + rs.getString("TYPE_NAME"));
            }
        }
    }

    private static void rejected(Connection conn) throws SQLException {
        try (Statement st = conn.createStatement()) {
            st.executeQuery("SELECT id FROM adult");
            System.out.println("error=none");
        } catch (SQLException e) {
            System.out.println("error=" + e.getSQLState() + ":" + e.getMessage().split("\n")[0]);
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 1")) {
            rs.next();
            System.out.println("after=" + rs.getInt(1));
        }
    }
}
