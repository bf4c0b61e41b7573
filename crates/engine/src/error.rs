//! How a failed operation is described: its class and message. It sits below the drivers'
//! contract ([`crate::driver`]) and the load engine ([`crate::load`]), which both speak it.

use std::borrow::Cow;
use std::fmt;

/// The classes failed operations are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// A key that should exist does not.
    NotFound,
    /// Data read back differs from what was written.
    Corrupt,
    /// An I/O error from the operating system.
    Io,
    /// No answer in time.
    Timeout,
    /// The target refused the connection.
    Refused,
    /// The connection was reset or closed mid-operation.
    Reset,
    /// The target answered something the protocol does not allow.
    Protocol,
    /// The target answered with an error of its own (non-2xx, SQL error …).
    Application,
    /// The store is full or a limit was hit.
    Full,
}

impl ErrorClass {
    pub const COUNT: usize = 9;
    pub const ALL: [ErrorClass; Self::COUNT] = [
        ErrorClass::NotFound,
        ErrorClass::Corrupt,
        ErrorClass::Io,
        ErrorClass::Timeout,
        ErrorClass::Refused,
        ErrorClass::Reset,
        ErrorClass::Protocol,
        ErrorClass::Application,
        ErrorClass::Full,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::NotFound => "not_found",
            ErrorClass::Corrupt => "corrupt",
            ErrorClass::Io => "io",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Refused => "refused",
            ErrorClass::Reset => "reset",
            ErrorClass::Protocol => "protocol",
            ErrorClass::Application => "application",
            ErrorClass::Full => "full",
        }
    }

    pub fn parse(s: &str) -> Option<ErrorClass> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Whether the failure was the connection's (it broke, was refused, timed out, or carried
    /// nonsense): a session that saw it is no use any more, and a replicated target's session
    /// moves to another server.
    pub fn is_connection(self) -> bool {
        matches!(
            self,
            ErrorClass::Io
                | ErrorClass::Reset
                | ErrorClass::Refused
                | ErrorClass::Timeout
                | ErrorClass::Protocol
        )
    }

    /// The class of an I/O error by its kind.
    pub fn of_io(e: &std::io::Error) -> ErrorClass {
        use std::io::ErrorKind as K;
        match e.kind() {
            K::NotFound => ErrorClass::NotFound,
            K::TimedOut | K::WouldBlock => ErrorClass::Timeout,
            K::ConnectionRefused => ErrorClass::Refused,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                ErrorClass::Reset
            }
            K::StorageFull | K::QuotaExceeded => ErrorClass::Full,
            _ => ErrorClass::Io,
        }
    }
}

/// A failed operation. The message is built only on the failure path, and a fixed message
/// (`&'static str`) costs no allocation at all — a target answering errors at full speed does not
/// make dyno allocate per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    pub class: ErrorClass,
    pub message: Cow<'static, str>,
}

impl OpError {
    pub fn new(class: ErrorClass, message: impl Into<Cow<'static, str>>) -> OpError {
        OpError {
            class,
            message: message.into(),
        }
    }

    pub fn io(context: &str, e: &std::io::Error) -> OpError {
        OpError::new(ErrorClass::of_io(e), format!("{context}: {e}"))
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.as_str(), self.message)
    }
}

impl std::error::Error for OpError {}
