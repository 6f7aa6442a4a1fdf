//! The workflows the suites run, and committing files to an account's workspace as a test's
//! set-up.

use storage::AccountId;
use workspace::{Author, Change, RelPath, Workspaces};

/// A workflow with a gate before a networked step that holds a connection.
pub const REFUND: &str = r#"name: refund
python: "3.11"
inputs: { ticket_id: string }
steps:
  - id: build_request
    explain: Turns the ticket into a refund request.
    inputs: { ticket_id: { from: input.ticket_id } }
    code: |
      def main(ticket_id):
          return {"ticket": ticket_id}
  - id: send_refund!
    explain: Sends the refund to the payments provider.
    network: public_egress
    connections: [payments]
    inputs: { request: { from: build_request } }
    code: |
      def main(request):
          return request
  - id: confirm
    explain: Confirms the refund.
    inputs: { sent: { from: send_refund } }
    code: |
      def main(sent):
          return sent
"#;

/// A networked step then an offline one, no gate.
pub const FETCH: &str = r#"name: fetch
python: "3.11"
steps:
  - id: fetch
    explain: Fetches the orders.
    network: public_egress
    connections: [payments]
    code: |
      def main():
          return {}
  - id: summarize
    explain: Summarizes them.
    inputs: { orders: { from: fetch } }
    code: |
      def main(orders):
          return orders
"#;

/// Two offline steps; the first holds the connection.
pub const OFFLINE: &str = r#"name: offline
python: "3.11"
inputs: { count: integer }
steps:
  - id: compute
    explain: Computes a number.
    connections: [payments]
    inputs: { count: { from: input.count }, factor: 2 }
    code: |
      def main(count, factor):
          return count * factor
  - id: report
    explain: Reports it.
    inputs: { value: { from: compute } }
    code: |
      def main(value):
          return value
"#;

/// A workflow that parks at the gate `ship` after one offline step.
pub const GATED: &str = r#"name: gated
python: "3.11"
steps:
  - id: prepare
    explain: Prepares the shipment.
    code: |
      def main():
          return {"ready": True}
  - id: ship!
    explain: Ships it.
    code: |
      def main():
          return {"shipped": True}
"#;

/// Parses a workflow of this module (or any test's text) as `workflow.yaml`.
pub fn workflow(text: &str) -> spec::Workflow {
    spec::parse_workflow("workflow.yaml", text).unwrap()
}

/// Commits `files` (path, text) as one revision of `account`'s workspace, by `author`, with
/// nothing screened out.
pub fn commit_files(
    workspaces: &Workspaces,
    account: &AccountId,
    author: &Author,
    files: &[(&str, &str)],
) {
    let changes = files
        .iter()
        .map(|(path, text)| {
            (
                RelPath::parse(path).unwrap(),
                Change::Write(text.as_bytes().to_vec()),
            )
        })
        .collect();
    workspaces
        .for_account(account)
        .unwrap()
        .commit(author, "test files", changes, &|_: &[u8]| false)
        .unwrap();
}
