//! Keeping credentials out of what the user sees: an object_store error's text with every URL
//! in it shown as the core shows a URL ([`arrowsmith::source::shown_url`]: no userinfo that may
//! be a credential, no query string, where a SAS token or a signature sits) and minus every
//! secret the settings hold.

use arrowsmith::source::{urls_shown, StorageOptions};

/// Whether the setting `key` holds a credential.
fn is_secret_key(key: &str) -> bool {
    const MARKS: [&str; 7] = [
        "secret",
        "key",
        "token",
        "password",
        "sas",
        "credential",
        "service_account",
    ];
    let key = key.to_ascii_lowercase();
    MARKS.iter().any(|mark| key.contains(mark))
}

/// The secrets a message must not show: the credential settings' values, from the options and
/// from the environment the stores read (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} secrets)", self.secrets.len())
    }
}

impl Redactor {
    pub(crate) fn new(options: &StorageOptions) -> Redactor {
        let from_env = std::env::vars().filter(|(key, _)| {
            ["AWS_", "GOOGLE_", "AZURE_"]
                .iter()
                .any(|prefix| key.starts_with(prefix))
        });
        let mut secrets: Vec<String> = options
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .chain(from_env)
            .filter(|(key, value)| is_secret_key(key) && value.len() >= 4)
            .map(|(_, value)| value)
            .collect();
        // Longest first, so that a secret containing another is removed whole.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `text` (an object_store error's) without secrets, URL userinfo or query strings.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut text = urls_shown(text);
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "<redacted>");
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaned_text_has_no_secret_and_no_query() {
        let mut options = StorageOptions::default();
        options.set("aws_secret_access_key", "TOPSECRET123");
        options.set("aws_endpoint_url", "http://127.0.0.1:9000");
        let redactor = Redactor::new(&options);
        let text = "error sending request for url (https://u:p@acct.blob.core.windows.net/c/k?sig=S3CR3T) \
                    with key TOPSECRET123 at http://127.0.0.1:9000/b; \
                    az://user:pw@acct/k?sv=1&sig=SASSIG: not found";
        let cleaned = redactor.clean(text);
        for secret in ["TOPSECRET123", "S3CR3T", "u:p", "user", "pw", "SASSIG"] {
            assert!(!cleaned.contains(secret), "{cleaned}");
        }
        assert!(
            cleaned.contains("https://acct.blob.core.windows.net/c/k)"),
            "{cleaned}"
        );
        // A URL's password goes with its user; the colon after the URL is the message's.
        assert!(cleaned.ends_with("az://acct/k: not found"), "{cleaned}");
        // The endpoint is no credential: it stays, to say where the request went.
        assert!(cleaned.contains("http://127.0.0.1:9000/b"), "{cleaned}");
    }
}
