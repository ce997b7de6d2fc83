/**
 * Which schema goes with which method, per direction: the tables a dispatcher decodes `params`
 * and encodes `result`s with.
 *
 * - `agentRequests`: client → agent requests (decode `params`, encode `result`);
 * - `agentNotifications`: client → agent notifications (decode `params`);
 * - `clientRequests`: agent → client requests (encode `params`, decode `result`);
 * - `clientNotifications`: agent → client notifications (encode `params`).
 */
import * as Answers from "./Answers.ts"
import * as Client from "./Client.ts"
import * as Initialize from "./Initialize.ts"
import { AgentMethod, ClientMethod, ProtocolMethod } from "./Methods.ts"
import * as Session from "./Session.ts"
import * as Update from "./Update.ts"

export const agentRequests = {
  [AgentMethod.initialize]: { params: Initialize.InitializeRequest, result: Initialize.InitializeResponse },
  [AgentMethod.authenticate]: { params: Initialize.AuthenticateRequest, result: Initialize.AuthenticateResponse },
  [AgentMethod.logout]: { params: Initialize.LogoutRequest, result: Initialize.LogoutResponse },
  [AgentMethod.sessionNew]: { params: Session.NewSessionRequest, result: Answers.NewSessionResponse },
  [AgentMethod.sessionLoad]: { params: Session.LoadSessionRequest, result: Answers.LoadSessionResponse },
  [AgentMethod.sessionResume]: { params: Session.ResumeSessionRequest, result: Answers.ResumeSessionResponse },
  [AgentMethod.sessionList]: { params: Session.ListSessionsRequest, result: Answers.ListSessionsResponse },
  [AgentMethod.sessionClose]: { params: Session.CloseSessionRequest, result: Answers.CloseSessionResponse },
  [AgentMethod.sessionDelete]: { params: Session.DeleteSessionRequest, result: Answers.DeleteSessionResponse },
  [AgentMethod.sessionPrompt]: { params: Session.PromptRequest, result: Answers.PromptResponse },
  [AgentMethod.sessionSetMode]: { params: Session.SetSessionModeRequest, result: Answers.SetSessionModeResponse },
  [AgentMethod.sessionSetConfigOption]: {
    params: Session.SetSessionConfigOptionRequest,
    result: Answers.SetSessionConfigOptionResponse
  }
} as const

export const agentNotifications = {
  [AgentMethod.sessionCancel]: Session.CancelNotification,
  [ProtocolMethod.cancelRequest]: Session.CancelRequestNotification
} as const

export const clientRequests = {
  [ClientMethod.sessionRequestPermission]: {
    params: Client.RequestPermissionRequest,
    result: Client.RequestPermissionResponse
  },
  [ClientMethod.fsReadTextFile]: { params: Client.ReadTextFileRequest, result: Client.ReadTextFileResponse },
  [ClientMethod.fsWriteTextFile]: { params: Client.WriteTextFileRequest, result: Client.WriteTextFileResponse },
  [ClientMethod.terminalCreate]: { params: Client.CreateTerminalRequest, result: Client.CreateTerminalResponse },
  [ClientMethod.terminalOutput]: { params: Client.TerminalOutputRequest, result: Client.TerminalOutputResponse },
  [ClientMethod.terminalWaitForExit]: {
    params: Client.WaitForTerminalExitRequest,
    result: Client.WaitForTerminalExitResponse
  },
  [ClientMethod.terminalKill]: { params: Client.KillTerminalRequest, result: Client.KillTerminalResponse },
  [ClientMethod.terminalRelease]: { params: Client.ReleaseTerminalRequest, result: Client.ReleaseTerminalResponse }
} as const

export const clientNotifications = {
  [ClientMethod.sessionUpdate]: Update.SessionNotification,
  [ProtocolMethod.cancelRequest]: Session.CancelRequestNotification
} as const

export type AgentRequestMethod = keyof typeof agentRequests
export type AgentNotificationMethod = keyof typeof agentNotifications
export type ClientRequestMethod = keyof typeof clientRequests
export type ClientNotificationMethod = keyof typeof clientNotifications
