//! Keeping credentials out of what the user sees: the URL as given minus its userinfo and
//! query string (where a SAS token or a password sits), and an object_store error's text minus
//! the same parts of every URL in it and minus every secret the settings hold.

use arrowsmith::source::StorageOptions;

/// How a message names `url`: as the user gave it, without its userinfo (for `http(s)`; the
/// `container@account` of an `abfss://` URL is no credential and stays, minus any password),
/// its query string and its fragment.
pub(crate) fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return strip_query(url).to_string();
    };
    let rest = strip_query(rest);
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let web = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
            match userinfo.split_once(':') {
                _ if web => host.to_string(),
                Some((user, _password)) => format!("{user}@{host}"),
                None => authority.to_string(),
            }
        }
        None => authority.to_string(),
    };
    format!("{scheme}://{authority}{path}")
}

fn strip_query(text: &str) -> &str {
    let end = text.find(['?', '#']).unwrap_or(text.len());
    &text[..end]
}

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
        let mut text = strip_urls(text);
        for secret in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), "<redacted>");
            }
        }
        text
    }
}

/// `text` with every URL in it shown as [`shown_url`] shows one.
fn strip_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ')' | '<' | '>' | ','))
            .map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..scheme_start]);
        out.push_str(&shown_url(&rest[scheme_start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_lose_credentials_and_keep_the_rest() {
        let cases = [
            ("s3://bucket/a/b.jay", "s3://bucket/a/b.jay"),
            (
                "https://user:pw@host:8080/p/f.jay?sig=abc#x",
                "https://host:8080/p/f.jay",
            ),
            ("http://token@host/f", "http://host/f"),
            (
                "abfss://data@acct.dfs.core.windows.net/f.jay",
                "abfss://data@acct.dfs.core.windows.net/f.jay",
            ),
            ("az://c:pw@acct/f?sv=1", "az://c@acct/f"),
            ("gs://bucket", "gs://bucket"),
        ];
        for (given, shown) in cases {
            assert_eq!(shown_url(given), shown, "{given}");
        }
    }

    #[test]
    fn cleaned_text_has_no_secret_and_no_query() {
        let mut options = StorageOptions::default();
        options.set("aws_secret_access_key", "TOPSECRET123");
        options.set("aws_endpoint_url", "http://127.0.0.1:9000");
        let redactor = Redactor::new(&options);
        let text = "error sending request for url (https://u:p@acct.blob.core.windows.net/c/k?sig=S3CR3T) \
                    with key TOPSECRET123 at http://127.0.0.1:9000/b";
        let cleaned = redactor.clean(text);
        for secret in ["TOPSECRET123", "S3CR3T", "u:p"] {
            assert!(!cleaned.contains(secret), "{cleaned}");
        }
        assert!(
            cleaned.contains("https://acct.blob.core.windows.net/c/k)"),
            "{cleaned}"
        );
        // The endpoint is no credential: it stays, to say where the request went.
        assert!(cleaned.contains("http://127.0.0.1:9000/b"), "{cleaned}");
    }
}
